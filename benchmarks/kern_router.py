"""Micro-benchmark of the KERN router against Softmax, Sigmoid and Tanh: forward + backward wall time.

The paper (arXiv 2509.25913) calls KERN "zero-additional-cost". This script times each router of
``iclr26.kern.ROUTERS`` on the same input and weights (routers interleaved round by round) and prints the median and
minimum times and the ratio to Softmax, next to the counted gate FLOPs per token (:func:`iclr26.kern.gate_cost`).
``iclr26 run kern`` records the same timing at its configured size in its ``timings``; its verdict uses the counted
cost, because wall-clock ratios vary between identical runs (1.07-7.95 over seven smoke runs on a shared machine).

Usage::

    .venv/bin/python benchmarks/kern_router.py --tokens 4096 --d-model 1024 --experts 64 --k 8 --repeats 50
"""

from __future__ import annotations

import argparse

import torch

from iclr26.common.config import ConfigError
from iclr26.common.device import resolve_device
from iclr26.kern import ROUTERS, gate_cost
from iclr26.kern.analysis import make_router_bench, time_routers


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
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    try:
        device = resolve_device(args.device)
    except ConfigError as err:
        parser.error(f"--device {args.device}: {err}")
    bench = make_router_bench(
        ROUTERS,
        d_model=args.d_model,
        num_experts=args.experts,
        k=args.k,
        n_tokens=args.tokens,
        generator=torch.Generator().manual_seed(args.seed),
        device=device,
    )
    timings = time_routers(bench.routers, bench.x, repeats=args.repeats)
    base = timings["softmax"]
    flops = {name: gate_cost(name, num_experts=args.experts, k=args.k).flops for name in timings}
    print(
        f"N={args.tokens} D={args.d_model} E={args.experts} k={args.k} device={args.device} "
        f"threads={torch.get_num_threads()} repeats={args.repeats}"
    )
    print(f"{'router':<15}{'median ms':>12}{'min ms':>10}{'median / softmax':>18}{'gate FLOPs':>12}{'/ softmax':>11}")
    for name, t in timings.items():
        print(
            f"{name:<15}{t.median_ms:>12.3f}{t.min_ms:>10.3f}{t.median_ms / base.median_ms:>18.3f}"
            f"{flops[name]:>12}{flops[name] / flops['softmax']:>11.3f}"
        )


if __name__ == "__main__":
    main()
