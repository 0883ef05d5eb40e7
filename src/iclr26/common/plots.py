"""Plot helpers shared by the reproductions: a headless matplotlib figure and an atomic PNG save."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _pyplot() -> Any:
    """``matplotlib.pyplot`` with the headless Agg backend (no screen on the machines this runs on), imported on the
    first plot, so that a process that draws nothing does not load matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure(ncols: int = 1, nrows: int = 1, *, width: float = 5.0, height: float = 3.6) -> tuple[Figure, object]:
    """A new figure with ``nrows x ncols`` axes, each ``width x height`` inches."""
    fig, axes = _pyplot().subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    return fig, axes if nrows * ncols > 1 else axes[0][0]


def savefig(fig: Figure, path: Path, *, dpi: int = 110) -> Path:
    """Save ``fig`` as PNG at ``path`` (via a temporary file and rename) and close it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.tight_layout()
    fig.savefig(tmp, dpi=dpi, format="png")
    _pyplot().close(fig)
    os.replace(tmp, path)
    return path
