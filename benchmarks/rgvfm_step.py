"""Micro-benchmark of RG-VFM's training step: ``torch.optim.Adam(fused=True)`` against the loop implementation.

The optimiser step is about a fifth of ``iclr26 run rgvfm``'s training time, so the package uses the fused Adam
where it gives the same weights. This script builds two copies of the same model (the official 4-layer SELU MLP,
``TimeMLP``, inside the flow of ``--model``; identical initial weights), trains one with ``Adam(fused=True)`` and
one with ``Adam(fused=False)`` on the S² checkerboard through :class:`iclr26.rgvfm.training.FlowTrainer` with the
same generator seed, one block of ``--block`` steps at a time, the two alternating (paired rounds), and prints the
median over rounds of the ratio fused / loop of the block times, with its interquartile range, and the largest
parameter difference at the end (the two must agree to float32 rounding: the package uses the fused step where it
gives the same weights).

Usage::

    .venv/bin/python benchmarks/rgvfm_step.py --model rgvfm --batch 1024 --rounds 20 --block 10 --clock cpu
"""

from __future__ import annotations

import argparse
import statistics

import torch

from iclr26.common.clock import add_clock_argument, clock_for
from iclr26.common.config import ConfigError
from iclr26.common.device import resolve_device
from iclr26.rgvfm import FLOW_SPECS, Sphere, TimeMLP, build_flow, make_prior
from iclr26.rgvfm.benchmarks import checkerboard
from iclr26.rgvfm.training import FlowTrainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="rgvfm", choices=list(FLOW_SPECS), help="flow (default RG-VFM-M)")
    parser.add_argument("--batch", type=int, default=1024, help="minibatch size (official and cpu scale: 1024)")
    parser.add_argument("--rounds", type=int, default=20, help="paired rounds (each: one block per optimiser)")
    parser.add_argument("--block", type=int, default=10, help="training steps per timed block")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
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
    sphere = Sphere(2)
    data = checkerboard(sphere, 10_000, generator=torch.Generator().manual_seed(args.seed)).to(device)
    prior = make_prior(sphere, intrinsic=FLOW_SPECS[args.model].intrinsic)
    trainers = {}
    for fused in (True, False):
        torch.manual_seed(args.seed)
        network = TimeMLP(3).to(device)
        flow = build_flow(args.model, sphere, network)
        generator = torch.Generator(device).manual_seed(args.seed + 1)
        trainers[fused] = FlowTrainer(
            flow, network.parameters(), data, prior, batch_size=args.batch, lr=1e-3, generator=generator, fused=fused
        )

    def block(fused: bool) -> float:
        start = clock()
        trainers[fused].run(args.block)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return clock() - start

    for fused in (True, False):  # warm-up (both take the same steps, so their weights stay comparable)
        block(fused)
    ratios, times = [], {True: [], False: []}
    for r in range(args.rounds):
        order = (True, False) if r % 2 == 0 else (False, True)  # alternate who goes first
        measured = {fused: block(fused) for fused in order}
        for fused, seconds in measured.items():
            times[fused].append(seconds)
        ratios.append(measured[True] / measured[False])
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    diff = max(
        float((a.detach() - b.detach()).abs().max())
        for a, b in zip(trainers[True].params, trainers[False].params, strict=True)
    )
    print(f"device {device}, threads {args.threads}, model {args.model}, batch {args.batch}, "
          f"{args.rounds} rounds x {args.block} steps")  # fmt: skip
    for fused in (True, False):
        print(f"Adam(fused={fused!s:<5}) median {1e3 * statistics.median(times[fused]) / args.block:.2f} ms/step")
    print(f"median of paired ratios fused / loop: {statistics.median(ratios):.3f} (IQR {q1:.3f}-{q3:.3f})")
    print(f"largest weight difference after {trainers[True].step} steps: {diff:.2e}")


if __name__ == "__main__":
    main()
