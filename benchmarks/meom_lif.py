"""Benchmark of MEOM's LIF layer against snntorch's ``Leaky``: forward + backward over T timesteps.

The layer has a fast path for the TWD neuron's hard reset to 0 (one autograd node per step
for fire and reset, :class:`iclr26.meom.lif.FireAndReset`) and stacks the membrane only on request. This script
times, interleaved round by round in one process (the order alternates between rounds):

- ``package``: ``LIF(decay=0.5, v_threshold=1.0, v_reset=0.0, alpha=4)`` on the (T, B, ...) input;
- ``snntorch``: ``snntorch.Leaky(beta=0.5, threshold=1.0, reset_mechanism="zero",
  spike_grad=surrogate.sigmoid(slope=4))`` stepped over T from ``init_leaky()``, spikes stacked;
- ``before``: the separate-op loop the layer ran before the fast path (charge, spike, reset, membrane stacked);

each as forward + backward of ``(spikes * w).sum()``, and prints the median time and the median of the per-round
ratios package / snntorch (with min and max): the target is <= 1.0 at every shape. The neurons are the same model
(snntorch computes the reset from the previous step's spike, which gives the same spikes); the spike trains are
checked to be equal before timing.

Usage (needs snntorch: ``pip install snntorch``)::

    .venv/bin/python benchmarks/meom_lif.py --shapes 6x256x64x16x16,6x64x32x8x8,6x1000x1x8x8 --rounds 7 --clock cpu

``--clock cpu`` times each call by its thread's CPU time (robust to a loaded machine); ``--clock wall`` (default) by
``perf_counter``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from iclr26.meom.lif import LIF, spike

CLOCK = time.perf_counter  # --clock cpu: time.thread_time, the CPU time of this thread (robust to a loaded machine)


def before(x: torch.Tensor) -> torch.Tensor:
    """The separate-op loop without the fast path (general hard-reset formula, membrane stacked)."""
    v = torch.zeros_like(x[0])
    spikes, membrane = [], []
    for x_t in x:
        h = 0.0 + 0.5 * (v - 0.0) + x_t
        s = spike(h - 1.0, alpha=4.0)
        v = h * (1.0 - s) + 0.0 * s
        spikes.append(s)
        membrane.append(v)
    torch.stack(membrane)
    return torch.stack(spikes)


def make_snntorch() -> Callable[[torch.Tensor], torch.Tensor]:
    import snntorch
    from snntorch import surrogate

    leaky = snntorch.Leaky(beta=0.5, threshold=1.0, reset_mechanism="zero", spike_grad=surrogate.sigmoid(slope=4))

    def run(x: torch.Tensor) -> torch.Tensor:
        mem = leaky.init_leaky()
        spikes = []
        for x_t in x:
            spk, mem = leaky(x_t, mem)
            spikes.append(spk)
        return torch.stack(spikes)

    return run


def fwd_bwd(layer: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, w: torch.Tensor) -> Callable[[], float]:
    def run() -> float:
        xi = x.detach().requires_grad_(True)
        t0 = CLOCK()
        (layer(xi) * w).sum().backward()
        return CLOCK() - t0

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shapes",
        default="6x256x64x16x16,6x64x32x8x8,6x64x16x8x8,4x32x64x4x4",
        help="(T, B, ...) input shapes, 'x'-separated, comma-separated list",
    )
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per shape (after one warm-up)")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: perf_counter; cpu: this thread's CPU time (one thread: excludes waiting on a loaded machine)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    snn = make_snntorch()
    package = LIF(decay=0.5, v_threshold=1.0, v_reset=0.0, alpha=4.0)
    print(
        f"threads={torch.get_num_threads()} rounds={args.rounds} clock={args.clock} "
        "(ratio = package / snntorch per round)"
    )
    print(
        f"{'shape (T,B,...)':<20}{'package ms':>12}{'snntorch ms':>13}{'before ms':>11}"
        f"{'median':>9}{'min':>7}{'max':>7}"
    )
    for spec in args.shapes.split(","):
        shape = tuple(int(s) for s in spec.split("x"))
        gen = torch.Generator().manual_seed(args.seed)
        x = 1.5 * torch.rand(shape, generator=gen)  # currents in [0, 1.5): a mix of firing and silent neurons
        w = torch.randn(shape, generator=gen)
        with torch.no_grad():
            assert torch.equal(package(x), snn(x)), "package and snntorch spike trains differ"
        fns = {"package": fwd_bwd(package, x, w), "snntorch": fwd_bwd(snn, x, w), "before": fwd_bwd(before, x, w)}
        for fn in fns.values():
            fn()
        times: dict[str, list[float]] = {name: [] for name in fns}
        for r in range(args.rounds):
            for name in list(fns) if r % 2 == 0 else list(reversed(fns)):
                times[name].append(fns[name]())
        ratios = [p / s for p, s in zip(times["package"], times["snntorch"], strict=True)]
        med = {name: 1e3 * statistics.median(t) for name, t in times.items()}
        print(
            f"{spec:<20}{med['package']:>12.2f}{med['snntorch']:>13.2f}{med['before']:>11.2f}"
            f"{statistics.median(ratios):>9.3f}{min(ratios):>7.3f}{max(ratios):>7.3f}"
        )


if __name__ == "__main__":
    main()
