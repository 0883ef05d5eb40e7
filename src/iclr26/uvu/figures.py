"""Plots of the UVU reproduction (headless; saved through :func:`iclr26.common.plots.savefig`)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from iclr26.common.plots import figure
from iclr26.uvu.studies import NTKStudy, RejectionStudy

_CATEGORY_NAMES = ("future covered", "in data, future missing", "not in data")


def plot_ntk_gap(study: NTKStudy, *, quantile: float) -> Figure:
    """Gap between ``½ E[ε²]`` and the ensemble variance vs width, against the sampling-noise level.

    Args:
        study: the NTK study.
        quantile: the quantile of the simulated gap that ``study.noise_gap_quantile`` holds (for the label).
    """
    fig, ax = figure(width=5.5)
    ax.plot(study.widths, study.gap, "o-", label="UVU ½ε² vs ensemble σ²")
    ax.plot(study.widths, study.gap_uvu_theory, "s--", label="UVU ½ε² vs NTK limit")
    ax.plot(study.widths, study.gap_ensemble_theory, "^--", label="ensemble σ² vs NTK limit")
    ax.axhline(study.noise_gap_mean, color="grey", lw=1, label="exact agreement, finite K (mean)")
    ax.axhline(study.noise_gap_quantile, color="grey", lw=1, ls=":", label=f"exact agreement, {100 * quantile:g}th pct")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("hidden width")
    ax.set_ylabel("relative L1 gap over (s, a, z)")
    ax.set_title("UVU error vs ensemble variance (finite MDP)")
    ax.legend(fontsize=7)
    return fig


def plot_ntk_points(study: NTKStudy) -> Figure:
    """Per point: ``½ε²`` and RND vs the ensemble variance (largest width), and means per coverage category."""
    fig, axes = figure(ncols=2, width=5.0)
    ax, bx = axes[0]
    markers = ("o", "s", "^")
    for c, name in enumerate(_CATEGORY_NAMES):
        sel = study.categories == c
        if sel.any():
            ax.scatter(study.ensemble[sel], study.uvu_half[sel], s=14, marker=markers[c], label=f"UVU: {name}")
    lo = max(1e-8, float(min(study.ensemble.min(), study.uvu_half.min())))
    hi = float(max(study.ensemble.max(), study.uvu_half.max()))
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ensemble variance σ²")
    ax.set_ylabel("UVU ½ mean ε²")
    ax.set_title(f"width {study.widths[-1]}")
    ax.legend(fontsize=6)
    series = {
        "NTK limit": study.theory,
        "ensemble": study.ensemble,
        "UVU ½ε²": study.uvu_half,
        "RND ½err²": study.rnd_half,
    }
    xs = np.arange(len(_CATEGORY_NAMES))
    width = 0.8 / len(series)
    for j, (label, values) in enumerate(series.items()):
        means = [
            values[study.categories == c].mean() if (study.categories == c).any() else 0.0
            for c in range(len(_CATEGORY_NAMES))
        ]
        bx.bar(xs + j * width, means, width, label=label)
    bx.set_xticks(xs + 0.4 - width / 2, _CATEGORY_NAMES, fontsize=7)
    bx.set_ylabel("mean uncertainty")
    bx.set_title("where the uncertainty sits")
    bx.legend(fontsize=7)
    return fig


def plot_rejection(study: RejectionStudy) -> Figure:
    """Success rate of accepted tasks vs the fraction rejected, per method."""
    fig, ax = figure(width=5.5)
    for method in study.methods:
        ax.plot(study.fractions, method.curve, "-", label=f"{method.name} (AUC {method.auc:.3f})")
    ax.plot(study.fractions, study.oracle_curve, "k:", label=f"oracle (AUC {study.oracle_auc:.3f})")
    ax.axhline(study.base_success, color="grey", lw=1, label="random rejection")
    ax.set_xlabel("fraction of tasks rejected")
    ax.set_ylabel("success rate of accepted tasks")
    ax.set_title("GoToDoor offline multi-task: task rejection")
    ax.legend(fontsize=7)
    return fig


def plot_compute(study: RejectionStudy) -> Figure:
    """Rejection AUC against parameters and counted training multiply-adds per transition, per method."""
    fig, axes = figure(ncols=2, width=4.5)
    ax, bx = axes[0]
    for method in study.methods:
        ax.scatter(method.total_params, method.auc)
        ax.annotate(method.name, (method.total_params, method.auc), fontsize=7)
        bx.scatter(method.cost.update_macs, method.auc)
        bx.annotate(method.name, (method.cost.update_macs, method.auc), fontsize=7)
    for axis in (ax, bx):
        axis.set_xscale("log")
    ax.set_xlabel("parameters (incl. fixed targets)")
    bx.set_xlabel("training multiply-adds per transition")
    for axis in (ax, bx):
        axis.set_ylabel("rejection AUC")
    return fig
