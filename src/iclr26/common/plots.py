"""Plot helpers shared by the reproductions: a headless matplotlib figure and an atomic PNG save."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no screen on the machines this runs on

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def figure(ncols: int = 1, nrows: int = 1, *, width: float = 5.0, height: float = 3.6) -> tuple[Figure, object]:
    """A new figure with ``nrows x ncols`` axes, each ``width x height`` inches."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    return fig, axes if nrows * ncols > 1 else axes[0][0]


def savefig(fig: Figure, path: Path, *, dpi: int = 110) -> Path:
    """Save ``fig`` as PNG at ``path`` (via a temporary file and rename) and close it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.tight_layout()
    fig.savefig(tmp, dpi=dpi, format="png")
    plt.close(fig)
    os.replace(tmp, path)
    return path
