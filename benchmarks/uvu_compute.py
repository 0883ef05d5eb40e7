"""Micro-benchmark of UVU against deep ensembles and RND: wall time of one training update, beside the counted cost.

The paper (arXiv 2505.21119) says one UVU model matches large deep ensembles "at a fraction of the compute". This
script builds UVU, ensembles of the given sizes and RND with the same networks as ``iclr26 run uvu`` (a
``UniversalMLP`` per network), times one Adam update (forward, backward, step) of each on the same random minibatch
(methods interleaved round by round), and prints the median and minimum times and the ratio to the largest ensemble,
next to the counted multiply-adds per transition (:mod:`iclr26.uvu.cost`). ``iclr26 run uvu`` records its own
training times in its ``timings``; its verdict uses the counted cost, because the CPU-time ratio of identical runs
moved (0.18 and 0.23 in ``runs/uvu/2026-12-02T16-24-29.441334Z`` and ``2026-12-02T17-21-03.948852Z``).

Usage::

    .venv/bin/python benchmarks/uvu_compute.py --hidden 128,128 --heads 8 --ensembles 2,5,10 --batch 256 --clock cpu
"""

from __future__ import annotations

import argparse
import statistics

import torch

from iclr26.common.clock import add_clock_argument, clock_for
from iclr26.common.config import ConfigError
from iclr26.common.device import resolve_device
from iclr26.uvu import RND, UVU, Transitions, UniversalMLP, ValueEnsemble, ensemble_cost, rnd_cost, uvu_cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dim", type=int, default=98, help="state features D_s (GoToDoor size 7: 98)")
    parser.add_argument("--task-dim", type=int, default=6, help="task code D_z (GoToDoor: 6)")
    parser.add_argument("--actions", type=int, default=7, help="discrete actions (GoToDoor: 7)")
    parser.add_argument("--hidden", default="128,128", help="hidden widths, comma-separated (cpu scale: 128,128)")
    parser.add_argument("--heads", type=int, default=8, help="UVU and RND heads (cpu scale: 8)")
    parser.add_argument("--ensembles", default="2,5,10", help="ensemble sizes, comma-separated (cpu scale: 2,5,10)")
    parser.add_argument("--batch", type=int, default=256, help="minibatch size (cpu scale: 256)")
    parser.add_argument("--repeats", type=int, default=50, help="timed rounds")
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
    hidden = tuple(int(w) for w in args.hidden.split(","))
    sizes = [int(k) for k in args.ensembles.split(",")]
    torch.manual_seed(args.seed)

    def make(heads: int):
        return lambda: UniversalMLP(
            args.state_dim, args.task_dim, num_actions=args.actions, hidden=hidden, num_heads=heads
        ).to(device)

    widths_h, widths_1 = make(args.heads)().widths, make(1)().widths
    models = {"UVU": (UVU(make(args.heads)(), make(args.heads)(), gamma=0.9), uvu_cost(widths_h))}
    for k in sizes:
        models[f"ensemble-{k}"] = (ValueEnsemble(make(1), k, gamma=0.9), ensemble_cost(widths_1, k))
    models["RND"] = (RND(make(args.heads)(), make(args.heads)()), rnd_cost(widths_h))
    b = args.batch
    batch = Transitions(
        states=torch.randn(b, args.state_dim),
        actions=torch.randint(args.actions, (b,)),
        rewards=torch.randn(b),
        next_states=torch.randn(b, args.state_dim),
        next_actions=torch.randint(args.actions, (b,)),
        dones=torch.zeros(b),
        tasks=torch.randn(b, args.task_dim),
    ).to(device)
    optimizers = {
        name: torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
        for name, (model, _) in models.items()
    }

    def update(name: str) -> None:
        model = models[name][0]
        optimizers[name].zero_grad(set_to_none=True)
        model.loss(batch).backward()
        optimizers[name].step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for name in models:  # warm-up
        update(name)
    times: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.repeats):
        for name in models:
            start = clock()
            update(name)
            times[name].append(clock() - start)
    ref = f"ensemble-{max(sizes)}"
    ref_median, ref_macs = statistics.median(times[ref]), models[ref][1].update_macs
    print(f"device {device}, threads {args.threads}, batch {b}, hidden {hidden}, {args.repeats} rounds")
    print(f"{'method':<14}{'median ms':>11}{'min ms':>9}{'time ratio':>12}{'MACs/transition':>17}{'MAC ratio':>11}")
    for name, (_, cost) in models.items():
        median = statistics.median(times[name])
        print(
            f"{name:<14}{1e3 * median:>11.3f}{1e3 * min(times[name]):>9.3f}{median / ref_median:>12.2f}"
            f"{cost.update_macs:>17,}{cost.update_macs / ref_macs:>11.2f}"
        )


if __name__ == "__main__":
    main()
