"""Synthetic benchmarks on S² and H² (checkerboards, mixtures) and a loader for the user's own S² data.

The checkerboard follows the official repository (olgatticus/rg-vfm, ``data/toys.py``, read through the
code search): points uniform in [0, 4]² are kept where the cell (c_x, c_y) has c_x + c_y odd ("black");
a point in a white cell is moved one cell right, else (last column) one cell down, else (the top-right
corner) to the first column; the board is rescaled to [-1, 1]² (cells of side 0.5) and wrapped onto
the manifold by the exponential map at the base point, with the two board axes as normal coordinates
(north pole of S², origin of H²). Because of the moving rule the eight black cells carry unequal mass,
(1, 2, 2, 2, 2, 2, 2, 3)/16 [derived from the construction; tested]. The extent is |c| ≤ √2 rad, so
on S² the board covers a cap of radius 81° around the north pole.

The mixtures are our addition for the "mixtures of von Mises-Fisher / wrapped normals" the issue asks
for: eight vMF components (κ = 30) at the cube vertices (±1, ±1, ±1)/√3 of S², and six wrapped
normals (σ = 0.3) at distance 1.5 from the origin of H². Shapes: ``N`` samples, ``D`` ambient dim.
"""

from __future__ import annotations

import io
import math
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from iclr26.rgvfm.manifolds import Lorentz, Manifold, Sphere

NUM_SQUARES = 4
"""The board is NUM_SQUARES × NUM_SQUARES cells (official: 4)."""


def checkerboard_2d(n: int, *, generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32) -> Tensor:
    """n points of the official 4 × 4 checkerboard on [-1, 1]², shape (N, 2).

    Raises:
        ValueError: if ``n`` is not positive.
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    x = torch.rand(n, 2, generator=generator, dtype=dtype) * NUM_SQUARES
    cell = torch.floor(x).long()
    white = (cell[:, 0] + cell[:, 1]) % 2 == 0
    right = white & (cell[:, 0] < NUM_SQUARES - 1)
    down = white & ~right & (cell[:, 1] < NUM_SQUARES - 1)
    corner = white & ~right & ~down
    x[:, 0] += right.to(dtype) - (NUM_SQUARES - 1) * corner.to(dtype)
    x[:, 1] += down.to(dtype)
    return x / NUM_SQUARES * 2 - 1


def black_cells(coords: Tensor) -> Tensor:
    """Index (0..7) of the black cell containing each chart point, or -1 outside every black cell.

    Cells are half-open, [x_min, x_max) × [y_min, y_max), as in the official coverage metric
    (``scripts/mmd_metrics.py``); cell (col, row) is black when col + row is odd.

    Args:
        coords: chart coordinates, (N, 2).

    Returns:
        (N,) long tensor; black cells are numbered row-major among themselves.
    """
    cell = torch.floor((coords + 1) * NUM_SQUARES / 2).long()
    col, row = cell[:, 0], cell[:, 1]
    inside = (col >= 0) & (col < NUM_SQUARES) & (row >= 0) & (row < NUM_SQUARES)
    black = inside & ((col + row) % 2 == 1)
    return torch.where(black, (row * NUM_SQUARES + col) // 2, torch.full_like(col, -1))


def checkerboard(
    manifold: Manifold, n: int, *, generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32
) -> Tensor:
    """The checkerboard wrapped onto a 2-manifold by exp at its base point, shape (N, 3)."""
    if manifold.dim != 2:
        raise ValueError(f"the checkerboard needs a 2-dimensional manifold, got {manifold.name}")
    return manifold.from_chart(checkerboard_2d(n, generator=generator, dtype=dtype))


def vmf_sample(
    sphere: Sphere, mean: Tensor, n: int, *, kappa: float, generator: torch.Generator | None = None
) -> Tensor:
    """n samples of the von Mises-Fisher distribution on S² with mean direction ``mean`` and concentration κ.

    Wood's closed form for S²: the cosine to the mean is w = 1 + log(u + (1 - u) e^{-2κ})/κ, u ~ U(0, 1),
    the azimuth is uniform; the sample is drawn around the north pole o and carried to ``mean`` by the
    isometry exp_μ ∘ Γ_{o→μ} ∘ log_o (``mean`` must not be the south pole).

    Returns:
        (N, 3) points.

    Raises:
        ValueError: if the sphere is not S², κ ≤ 0, or ``mean`` is (near) the south pole.
    """
    if sphere.dim != 2:
        raise ValueError(f"vmf_sample is written for S², got {sphere.name}")
    if kappa <= 0:
        raise ValueError(f"kappa must be positive, got {kappa}")
    mean = sphere.proj(sphere.check_ambient(mean, "mean"))
    if float(mean[-1]) < -1 + 1e-6:
        raise ValueError("mean must not be the south pole (the transport from the north pole is undefined)")
    dtype = mean.dtype
    u = torch.rand(n, generator=generator, dtype=dtype)
    w = 1 + torch.log(u + (1 - u) * math.exp(-2 * kappa)) / kappa
    phi = 2 * math.pi * torch.rand(n, generator=generator, dtype=dtype)
    r = torch.sqrt((1 - w * w).clamp_min(0))
    around_pole = torch.stack([r * torch.cos(phi), r * torch.sin(phi), w], dim=-1)
    o = sphere.base_point(dtype=dtype).expand(n, -1)
    mu = mean.expand(n, -1)
    return sphere.exp(mu, sphere.transport(o, mu, sphere.log(o, around_pole)))


def vmf_mixture(sphere: Sphere, n: int, *, generator: torch.Generator | None = None) -> Tensor:
    """Equal mixture of 8 vMF components (κ = 30) at the cube vertices of S², shape (N, 3)."""
    signs = torch.tensor([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)], dtype=torch.float32)
    means = signs / math.sqrt(3)
    comp = torch.randint(len(means), (n,), generator=generator)
    out = torch.empty(n, 3)
    for k, mean in enumerate(means):
        idx = (comp == k).nonzero().squeeze(-1)
        if idx.numel():
            out[idx] = vmf_sample(sphere, mean, idx.numel(), kappa=30.0, generator=generator)
    return out


def wrapped_normal_mixture(lorentz: Lorentz, n: int, *, generator: torch.Generator | None = None) -> Tensor:
    """Equal mixture of 6 wrapped normals (σ = 0.3) at distance 1.5 from the origin of H², shape (N, 3)."""
    angles = torch.arange(6, dtype=torch.float32) * (2 * math.pi / 6)
    means = lorentz.from_chart(1.5 * torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1))
    comp = torch.randint(len(means), (n,), generator=generator)
    out = torch.empty(n, 3)
    for k, mean in enumerate(means):
        idx = (comp == k).nonzero().squeeze(-1)
        if idx.numel():
            out[idx] = lorentz.wrapped_normal(idx.numel(), mean=mean, scale=0.3, generator=generator)
    return out


UNIT_TOLERANCE = 1e-3
"""Largest ||x| - 1| accepted for a row of an (N, 3) data file (rows are then renormalised). Fixed before any file
was read: coordinates written with 4 decimals move |x| by at most 0.5e-4·√3 ≈ 9e-5, while vectors that are not
directions (raw coordinates, another radius) are off by far more."""

LAYOUTS = "an (N, 3) array of unit vectors or an (N, 2) array of latitude/longitude in degrees"


def load_sphere_points(path: Path | str) -> Tensor:
    """Points on S² from a user file: ``.npy``, or UTF-8 text (any other suffix; comma or whitespace separated,
    ``#`` comments).

    Two layouts are accepted: (N, 3) unit vectors (each row's norm within :data:`UNIT_TOLERANCE` of 1; rows are
    renormalised), or (N, 2) latitude/longitude in degrees (latitude in [-90, 90], longitude in [-180, 360]),
    mapped to (cos lat cos lon, cos lat sin lon, sin lat).

    Args:
        path: the file.

    Returns:
        (N, 3) float32 tensor of unit vectors, N ≥ 1.

    Raises:
        ValueError: naming the file and the fix when it is missing, a folder, empty, unreadable, not decodable
            (binary text, a malformed or pickled ``.npy``, non-numbers), of another shape, holds non-finite or
            out-of-range values or rows that are not unit vectors, or holds no points.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file; pass the path of an .npy, .csv or .txt file")
    if path.is_dir():
        raise ValueError(f"{path} is a folder; pass one file holding {LAYOUTS}")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ValueError(f"{path} cannot be read ({err.strerror or err}); check its permissions") from None
    if not raw:
        raise ValueError(f"{path} is empty; it must hold {LAYOUTS}")
    arr = _parse_points(path, raw)
    if arr.size == 0:
        raise ValueError(f"{path} holds no points; it must hold {LAYOUTS}")
    if arr.ndim != 2 or arr.shape[1] not in (2, 3):
        raise ValueError(f"{path}: expected {LAYOUTS}, got shape {arr.shape}")
    finite = np.isfinite(arr).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise ValueError(f"{path}: row {row} holds a non-finite value (NaN or inf); remove or fix that row")
    if arr.shape[1] == 2:
        if np.abs(arr[:, 0]).max() > 90 or arr[:, 1].min() < -180 or arr[:, 1].max() > 360:
            raise ValueError(
                f"{path}: in the (N, 2) layout latitude must lie in [-90, 90] and longitude in [-180, 360] degrees"
            )
        lat, lon = np.radians(arr[:, 0]), np.radians(arr[:, 1])
        return torch.from_numpy(
            np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=1)
        ).to(torch.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    off = np.abs(norms[:, 0] - 1) > UNIT_TOLERANCE
    if off.any():
        row = int(np.argmax(off))
        raise ValueError(
            f"{path}: {int(off.sum())} of {len(arr)} rows are not on the unit sphere S² (row {row} has norm "
            f"{float(norms[row, 0]):.6g}; the (N, 3) layout needs ||x| - 1| <= {UNIT_TOLERANCE:g}); normalise "
            "the rows, or pass latitude/longitude in degrees as an (N, 2) array"
        )
    return torch.from_numpy(arr / norms).to(torch.float32)


def _parse_points(path: Path, raw: bytes) -> np.ndarray:
    """The numbers of a ``.npy`` or text file as a float64 array (any shape), or a ValueError naming the file."""
    if path.suffix == ".npy":
        try:
            arr = np.load(io.BytesIO(raw), allow_pickle=False)
        except (ValueError, OSError, EOFError) as err:
            raise ValueError(
                f"{path} is not a readable .npy array of numbers ({err}); save it with numpy.save(path, array)"
            ) from None
        if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise ValueError(f"{path}: expected an array of real numbers, got dtype {arr.dtype}")
        return np.asarray(arr, dtype=np.float64)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(
            f"{path} is not UTF-8 text (a binary file?); save the points as .npy or as comma/space separated text"
        ) from None
    delimiter = "," if "," in text else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data": reported below
            return np.loadtxt(io.StringIO(text), delimiter=delimiter, ndmin=2, comments="#", dtype=np.float64)
    except ValueError as err:
        raise ValueError(
            f"{path} does not parse as rows of numbers ({err}); write one point per line, comma or space separated"
        ) from None
