"""Plots of the reproduction: KL curves (§5.1), torus shares and scatter (§5.2), metric vs budget and wall-clock,
and the 2-D scatter of the mixture samples."""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from iclr26.common.plots import figure
from iclr26.zoprox.studies import BudgetResult, LassoStudy, ToriStudy

LABELS = {
    "zod": "ZOD-PS (N interacting)",
    "zod_independent": "ZOD-PS, N=1 chains",
    "rgo": "proximal sampler + RGO",
    "rwm": "random-walk Metropolis",
    "ula": "ULA",
    "mala": "MALA",
    "in_and_out": "In-and-Out",
}


def plot_lasso(study: LassoStudy, threshold: float) -> Figure:
    """KL against iterations and against oracle queries for the three samplers of §5.1."""
    fig, axes = figure(2, width=5.2)
    for name, curve in study.curves.items():
        axes[0][0].plot(curve.iters, curve.kl, marker=".", label=LABELS[name])
        axes[0][1].plot(curve.queries, curve.kl, marker=".", label=LABELS[name])
    for ax, xlabel in zip(axes[0], ("iteration (proximal steps)", "oracle queries (f or ∇f)"), strict=True):
        ax.axhline(threshold, color="k", ls="--", lw=0.8, label=f"threshold {threshold}")
        ax.axhline(study.kl_floor, color="grey", ls=":", lw=0.8, label="exact-sample floor")
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("k-NN KL to exact samples")
    axes[0][0].set_title("Gaussian–Lasso mixture, d = 5")
    axes[0][0].legend(fontsize=7)
    return fig


def plot_tori(study: ToriStudy) -> Figure:
    """Share of particles in T1/T2 along the run (against iterations and against potential evaluations), and the
    final particles projected on the x-y plane."""
    fig, axes = figure(4, width=4.6)
    for name, style in (("zod", "-"), ("in_and_out", "--")):
        fr = np.array(study.fractions[name])
        axes[0][0].plot(study.iters, fr[:, 0], style, label=f"{LABELS[name]} in T1")
        axes[0][0].plot(study.iters, fr[:, 1], style, label=f"{LABELS[name]} in T2")
        # the initial state (0 evaluations) is drawn at the left edge of the log axis
        axes[0][1].plot(np.maximum(study.queries_along[name], 1), fr[:, 1], style, label=f"{LABELS[name]} in T2")
    for ax, xlabel in zip(axes[0][:2], ("iteration", "potential evaluations"), strict=True):
        ax.axhline(study.t2_mass, color="k", ls=":", lw=0.8, label="π(T2)")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("share of particles")
        ax.legend(fontsize=7)
    axes[0][1].set_xscale("log")
    for ax, name in zip(axes[0][2:], ("zod", "in_and_out"), strict=True):
        x = study.final_samples[name]
        ax.scatter(x[:, 0], x[:, 1], s=4)
        ax.set_xlim(-20, 25)
        ax.set_ylim(-15, 15)
        ax.set_aspect("equal")
        ax.set_title(f"{LABELS[name]}, k = {study.iters[-1]}")
    return fig


def plot_budget(results: dict[str, BudgetResult], axis: str) -> Figure:
    """W2 of each iterate against oracle queries (``axis="queries"``) or wall-clock (``axis="wall"``)."""
    fig, axes = figure(len(results), width=4.4)
    axes = axes[0] if len(results) > 1 else [axes]
    for ax, (target, res) in zip(axes, results.items(), strict=True):
        for name, curve in res.curves.items():
            # the initial state (0 queries, 0 s) is drawn at the left edge of the log axis
            xs = np.maximum(curve.queries, 1) if axis == "queries" else np.maximum(curve.wall_s, 1e-3)
            ax.plot(xs, curve.w2, marker=".", label=LABELS[name])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("oracle queries (f or ∇f)" if axis == "queries" else "wall-clock (s)")
        ax.set_ylabel("W2 to reference (one iterate)")
        ax.set_title(target)
    axes[0].legend(fontsize=7)
    return fig


def plot_scatter(result: BudgetResult, modes: torch.Tensor) -> Figure:
    """2-D scatter (first two coordinates) of every sampler's pooled final samples, with the mode centres."""
    names = list(result.pooled)
    reach = float(modes[:, :2].abs().max()) + 2.5
    fig, axes = figure(len(names), width=3.2, height=3.2)
    for ax, name in zip(axes[0], names, strict=True):
        x = result.pooled[name]
        ax.scatter(x[:, 0], x[:, 1], s=2, alpha=0.5)
        ax.scatter(modes[:, 0], modes[:, 1], marker="x", color="k")
        ax.set_title(LABELS[name], fontsize=8)
        ax.set_xlim(-reach, reach)
        ax.set_ylim(-reach, reach)
        ax.set_aspect("equal")
    return fig
