"""Training throughput of KERN's MoE language model against a dense model of the same active parameters.

Both are :class:`~iclr26.common.tinylm.TinyLM` models of the kern gpu preset's shape (``d_model`` 512, 8 layers,
context 512, batch 64; the MoE has 64 experts, top-8, expert width ``d_ff / 8``, the dense MLP ``d_ff`` 2048, so a
token uses the same FFN parameters in both). One step is the training step of ``iclr26 run kern`` (bf16 autocast on
CUDA, the fused AdamW, no host read): forward, cross-entropy plus the balance loss, backward, optimizer. The two
models alternate round by round in one process, and the script prints each one's median tokens per second and the
median over rounds of the ratio MoE / dense. On CUDA the target is a ratio of at least 0.5.

The MoE's dispatch is ``--dispatch`` (default ``auto``: one grouped GEMM over the tokens sorted by expert where the
CUDA build has ``torch.nn.functional.grouped_mm``, else a padded batched product; ``grouped``, one product per expert,
on the CPU); ``--capacity-factor`` as in the preset (2).

Usage::

    python benchmarks/kern_moe_gpu.py                        # CUDA, the gpu preset's shape
    python benchmarks/kern_moe_gpu.py --device cpu --smoke   # a small shape on the CPU, seconds

``--clock cpu`` times each CPU step by the CPU time of its thread (``time.thread_time``), which other jobs on a
loaded machine inflate far less than the wall time; on CUDA the clock is the wall time after a synchronisation.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from iclr26.common.tinylm import TinyLM, TinyLMConfig
from iclr26.kern import MoEFeedForward


def build(kind: str, args: argparse.Namespace, device: torch.device) -> TinyLM:
    """The dense (``kind == "dense"``) or the MoE model (KERN router), on ``device``."""
    cfg = TinyLMConfig(
        context_len=args.seq, d_model=args.d_model, n_layers=args.layers, n_heads=args.heads, d_ff=args.d_ff
    )
    if kind == "dense":
        return TinyLM(cfg).to(device)

    def moe(_layer: int) -> MoEFeedForward:
        return MoEFeedForward(
            args.d_model,
            num_experts=args.experts,
            k=args.k,
            d_expert=args.d_ff // args.k,
            router="kern",
            capacity_factor=args.capacity_factor,
            dispatch=args.dispatch,
            check_finite=False,
        )

    return TinyLM(cfg, moe).to(device)


def make_step(model: TinyLM, device: torch.device, args: argparse.Namespace):
    """One training step of ``model`` on a fixed random batch (the same for both models)."""
    fused = {"fused": True} if device.type == "cuda" else {}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **fused)
    gen = torch.Generator(device="cpu").manual_seed(0)
    idx = torch.randint(0, 256, (args.batch, args.seq + 1), generator=gen).to(device)
    x, y = idx[:, :-1], idx[:, 1:]
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else None

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        if autocast is not None:
            with autocast:
                out = model(x, y)
                loss = out.loss + out.aux_loss
        else:
            out = model(x, y)
            loss = out.loss + out.aux_loss
        loss.backward()
        opt.step()

    return step


def timed(step, device: torch.device, clock: str) -> float:
    """Seconds of one call of ``step``."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize(device)
        return time.perf_counter() - t0
    now = time.thread_time if clock == "cpu" else time.perf_counter
    t0 = now()
    step()
    return now() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--smoke", action="store_true", help="a small shape (seconds on the CPU)")
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d-ff", type=int, default=2048)
    parser.add_argument("--experts", type=int, default=64)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--capacity-factor", type=float, default=2.0)
    parser.add_argument("--dispatch", default="auto", choices=("auto", "grouped", "padded", "grouped_mm"))
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds (after 3 warm-up rounds)")
    parser.add_argument("--clock", default="wall", choices=("wall", "cpu"), help="CPU runs: wall or thread CPU time")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    if args.smoke:
        args.d_model, args.layers, args.heads, args.d_ff, args.experts, args.k = 64, 2, 4, 256, 8, 2
        args.seq, args.batch, args.rounds = 64, 8, min(args.rounds, 5)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(0)
    models = {kind: build(kind, args, device) for kind in ("moe", "dense")}
    steps = {kind: make_step(m, device, args) for kind, m in models.items()}
    active = {kind: m.num_params(active=True) for kind, m in models.items()}
    times: dict[str, list[float]] = {kind: [] for kind in models}
    order = list(models)
    for i in range(3 + args.rounds):
        for kind in order if i % 2 == 0 else order[::-1]:
            seconds = timed(steps[kind], device, args.clock)
            if i >= 3:
                times[kind].append(seconds)
    tokens = args.batch * args.seq
    print(
        f"device={device} D={args.d_model} L={args.layers} T={args.seq} B={args.batch} E={args.experts} "
        f"K={args.k} cf={args.capacity_factor} dispatch={args.dispatch} rounds={args.rounds} clock={args.clock} "
        f"torch={torch.__version__}"
    )
    for kind in order:
        print(
            f"{kind:5s} active params {active[kind]:>11,}  {tokens / statistics.median(times[kind]):>12,.0f} tokens/s"
            f"  (median step {1e3 * statistics.median(times[kind]):.2f} ms)"
        )
    ratio = statistics.median(d / m for m, d in zip(times["moe"], times["dense"], strict=True))
    print(f"MoE / dense tokens per second, median of paired rounds: {ratio:.3f}")


if __name__ == "__main__":
    main()
