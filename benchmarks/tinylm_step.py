"""Benchmark of one TinyLM training step against a nanoGPT-style model of the same size.

The contender is the model a user of ``iclr26.common.tinylm`` would compare with: nanoGPT's layout (pre-norm blocks,
fused QKV projection, ``scaled_dot_product_attention`` with ``is_causal=True``, GELU MLP, tied embeddings) with
*learned absolute positions*, so the ratio shows what TinyLM's rotary embedding costs. Both models have the same
width, depth, heads, MLP width and vocabulary; each step is forward, cross-entropy, backward and an AdamW update on
the same batch. The two models alternate round by round (order swapped every round), and the script prints the
median over rounds of the per-round ratio TinyLM / contender with its quartiles, which a slow spell of a shared
machine hits alike. ``--compile`` adds ``torch.compile`` of TinyLM and prints compiled / eager.

Usage (the committed output, ``benchmarks/tinylm_step.txt``, came from this line)::

    .venv/bin/python benchmarks/tinylm_step.py --rounds 40 --clock cpu --compile

``--clock cpu`` times each step by the CPU time of its thread (``time.thread_time``; torch runs on that one thread),
which other jobs on a loaded machine inflate far less than the wall time of the default ``--clock wall``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.common.tinylm import TinyLM, TinyLMConfig


class _NanoBlock(nn.Module):
    def __init__(self, d: int, heads: int, d_ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, x: Tensor) -> Tensor:
        B, T, D = x.shape
        q, k, v = self.c_attn(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, self.heads, D // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, D)
        x = x + self.c_proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class NanoGPT(nn.Module):
    """The contender: nanoGPT's architecture with learned positions, sized like a :class:`TinyLMConfig`."""

    def __init__(self, cfg: TinyLMConfig) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.context_len, cfg.d_model)
        self.blocks = nn.ModuleList(_NanoBlock(cfg.d_model, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx: Tensor, targets: Tensor) -> Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


CLOCK = time.perf_counter  # --clock cpu: time.thread_time, the CPU time of this thread (robust to a loaded machine)


def _step_fn(model: nn.Module, loss_of: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor], None]:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(idx: Tensor, targets: Tensor) -> None:
        opt.zero_grad(set_to_none=True)
        loss_of(idx, targets).backward()
        opt.step()

    return step


def paired_ratio(
    a: Callable[[], None], b: Callable[[], None], *, rounds: int, warmup: int
) -> tuple[float, float, float, tuple[float, float]]:
    """Median over rounds of time(a) / time(b), with the order of a and b swapped every round; also the median times
    (ms) and the quartiles of the per-round ratio."""
    ta: list[float] = []
    tb: list[float] = []
    for i in range(warmup + rounds):
        pair = []
        for fn in (a, b) if i % 2 == 0 else (b, a):
            t0 = CLOCK()
            fn()
            pair.append((fn, CLOCK() - t0))
        if i >= warmup:
            times = dict((id(fn), t) for fn, t in pair)
            ta.append(times[id(a)])
            tb.append(times[id(b)])
    ratios = [x / y for x, y in zip(ta, tb, strict=True)]
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return statistics.median(ratios), statistics.median(ta) * 1e3, statistics.median(tb) * 1e3, (q1, q3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=512)
    parser.add_argument("--seq", type=int, default=128, help="tokens per sequence T")
    parser.add_argument("--batch", type=int, default=32, help="sequences per step")
    parser.add_argument("--rounds", type=int, default=60, help="timed rounds")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: perf_counter; cpu: this thread's CPU time (one thread: excludes waiting on a loaded machine)",
    )
    parser.add_argument("--warmup", type=int, default=5, help="untimed rounds first")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile(TinyLM) against eager")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cfg = TinyLMConfig(
        context_len=args.seq, d_model=args.d_model, n_layers=args.layers, n_heads=args.heads, d_ff=args.d_ff
    )
    idx = torch.randint(0, cfg.vocab_size, (args.batch, args.seq))
    targets = torch.roll(idx, -1, dims=1)
    tiny = TinyLM(cfg)
    nano = NanoGPT(cfg)
    tiny_step = _step_fn(tiny, lambda i, t: tiny(i, t).loss)
    nano_step = _step_fn(nano, nano)
    print(
        f"D={cfg.d_model} L={cfg.n_layers} H={cfg.n_heads} d_ff={cfg.d_ff} T={args.seq} B={args.batch} "
        f"threads={torch.get_num_threads()} rounds={args.rounds} clock={args.clock} torch={torch.__version__}"
    )
    ratio, t_tiny, t_nano, (q1, q3) = paired_ratio(
        lambda: tiny_step(idx, targets), lambda: nano_step(idx, targets), rounds=args.rounds, warmup=args.warmup
    )
    print(
        f"TinyLM (RoPE) eager     {t_tiny:8.2f} ms   nanoGPT (learned pos.) {t_nano:8.2f} ms   "
        f"ratio {ratio:.3f} (IQR {q1:.3f}-{q3:.3f})"
    )
    if args.compile:
        compiled = torch.compile(TinyLM(cfg))
        compiled_step = _step_fn(compiled, lambda i, t: compiled(i, t).loss)
        eager = TinyLM(cfg)
        eager_step = _step_fn(eager, lambda i, t: eager(i, t).loss)
        ratio_c, t_c, t_e, (c1, c3) = paired_ratio(
            lambda: compiled_step(idx, targets),
            lambda: eager_step(idx, targets),
            rounds=args.rounds,
            warmup=args.warmup + 3,
        )
        print(
            f"TinyLM compiled         {t_c:8.2f} ms   TinyLM eager           {t_e:8.2f} ms   "
            f"ratio {ratio_c:.3f} (IQR {c1:.3f}-{c3:.3f})"
        )


if __name__ == "__main__":
    main()
