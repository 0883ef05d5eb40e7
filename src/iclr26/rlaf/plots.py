"""The plots of the RLAF reproduction: decisions per method, GRPO's validation curve, guided/unguided ratios."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from iclr26.common.plots import figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["cost_distributions", "ratios", "training_curves"]


def cost_distributions(distributions: dict[str, dict[str, dict[str, list[int]]]], methods: tuple[str, ...]) -> Figure:
    """Box plots of the CDCL's decisions per formula, one panel per family and set.

    Args:
        distributions: family → set → method → decisions per formula (seed 0).
        methods: the methods in panel order.
    """
    panels = [(f, n) for f, by_size in distributions.items() for n in by_size]
    fig, axes = figure(ncols=len(panels), width=3.6, height=3.4)
    axes = np.atleast_1d(axes).ravel()
    for ax, (family, n) in zip(axes, panels, strict=True):
        data = distributions[family][n]
        ax.boxplot([np.maximum(data[m], 1) for m in methods], showmeans=True)
        ax.set_xticks(range(1, len(methods) + 1), methods, rotation=20)
        ax.set_yscale("log")
        ax.set_title(f"{family}, {'your formulas' if n == 'data' else f'size {n}'} (CDCL)")
        ax.set_ylabel("decisions")
    return fig


def training_curves(training: dict[str, Any]) -> Figure:
    """GRPO's validation decisions (policy mode) and the sampled runs' mean cost, per family and seed.

    Args:
        training: family → ``seed<k>`` → history (``val_iteration``, ``val_decisions``, ``sampled_cost``).
    """
    fig, axes = figure(ncols=len(training), width=4.2, height=3.2)
    axes = np.atleast_1d(axes).ravel()
    for ax, (family, by_seed) in zip(axes, training.items(), strict=True):
        for name, hist in by_seed.items():
            ax.plot(hist["val_iteration"], hist["val_decisions"], marker="o", label=f"{name} val (mode)")
            steps = range(1, len(hist["sampled_cost"]) + 1)
            ax.plot(steps, hist["sampled_cost"], alpha=0.4, label=f"{name} train (sampled)")
        ax.set_title(f"GRPO on {family}")
        ax.set_xlabel("iteration")
        ax.set_ylabel("mean decisions")
        ax.legend(fontsize=7)
    return fig


def ratios(summary: dict[str, float], methods: tuple[str, ...]) -> Figure:
    """Bars of guided / unguided mean decisions per family, set and solver.

    Args:
        summary: ``"<family>/<set>/<solver>/<method>"`` → ratio (mean over seeds).
        methods: the guided methods, one bar each.
    """
    keys = sorted({k.rsplit("/", 1)[0] for k in summary})
    fig, ax = figure(width=max(5.0, 0.7 * len(keys)), height=3.6)
    x = np.arange(len(keys))
    width = 0.8 / len(methods)
    for j, method in enumerate(methods):
        offset = (j - (len(methods) - 1) / 2) * width
        ax.bar(x + offset, [summary.get(f"{k}/{method}", np.nan) for k in keys], width=width, label=method)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(x, keys, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("mean decisions / unguided")
    ax.set_title("guided / unguided mean decisions (mean over seeds)")
    ax.legend()
    return fig
