"""Micro-benchmark of the KERN router against the Softmax variants, Sigmoid and Tanh: forward + backward time.

The paper (arXiv 2509.25913) calls KERN "zero-additional-cost". This script times, on the same input and weights,
routers interleaved round by round:

* the **gate alone** (:func:`iclr26.kern.analysis.time_gates`: activation, normalisation, γ, top-k and
  renormalisation on shared logits), where the routers differ; the shared projection ``W x + b`` is left out, since
  it dilutes a slower gate (a 21% slower gate reads as 1.5% on the whole router at D = 1024, E = 64);
* the **whole router** (:func:`iclr26.kern.analysis.time_routers`: projection, gate and balance loss).

For each it prints the median and minimum times and the **median of the paired ratios** to Softmax (each round's
KERN time over the same round's Softmax time, so that a slow spell of a shared machine cancels), next to the counted
gate FLOPs per token (:func:`iclr26.kern.gate_cost`). ``iclr26 run kern`` records the same timings at its configured
size in its ``timings``; its verdict uses the counted cost, because wall-clock ratios vary between identical runs.

Usage::

    .venv/bin/python benchmarks/kern_router.py --tokens 4096 --d-model 1024 --experts 64 --k 8 --repeats 50 --clock cpu
"""

from __future__ import annotations

import argparse

import torch

from iclr26.common.clock import add_clock_argument, clock_for
from iclr26.common.config import ConfigError
from iclr26.common.device import resolve_device
from iclr26.kern import ROUTERS, gate_cost
from iclr26.kern.analysis import make_router_bench, median_paired_ratio, time_gates, time_routers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096, help="tokens per call N")
    parser.add_argument("--d-model", type=int, default=1024, help="hidden size D")
    parser.add_argument("--experts", type=int, default=64, help="experts E")
    parser.add_argument("--k", type=int, default=8, help="experts per token")
    parser.add_argument("--repeats", type=int, default=50, help="timed rounds")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1, as in iclr26 run kern)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    parser.add_argument("--seed", type=int, default=0)
    add_clock_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    try:
        device = resolve_device(args.device)
        clock = clock_for(args.clock, device)
    except (ConfigError, ValueError) as err:
        parser.error(str(err))
    bench = make_router_bench(
        ROUTERS,
        d_model=args.d_model,
        num_experts=args.experts,
        k=args.k,
        n_tokens=args.tokens,
        generator=torch.Generator().manual_seed(args.seed),
        device=device,
    )
    with torch.no_grad():
        logits = bench.routers["softmax"].proj(bench.x)  # (N, E), shared by every gate
    parts = {
        "gate only": time_gates({n: n for n in ROUTERS}, logits, args.k, repeats=args.repeats, clock=clock),
        "whole router": time_routers(bench.routers, bench.x, repeats=args.repeats, clock=clock),
    }
    flops = {name: gate_cost(name, num_experts=args.experts, k=args.k).flops for name in ROUTERS}
    print(
        f"N={args.tokens} D={args.d_model} E={args.experts} k={args.k} device={args.device} "
        f"threads={torch.get_num_threads()} repeats={args.repeats} clock={args.clock}"
    )
    for part, timings in parts.items():
        base = timings["softmax"]
        print(f"\n{part}")
        print(
            f"{'router':<16}{'median ms':>11}{'min ms':>9}{'median paired ratio / softmax':>31}"
            f"{'gate FLOPs':>12}{'/ softmax':>11}"
        )
        for name, t in timings.items():
            print(
                f"{name:<16}{t.median_ms:>11.3f}{t.min_ms:>9.3f}{median_paired_ratio(t, base):>31.3f}"
                f"{flops[name]:>12}{flops[name] / flops['softmax']:>11.3f}"
            )


if __name__ == "__main__":
    main()
