"""Crime data for ST-HHOL: a synthetic city with planted context effects and concept drift, and a loader for the
official data format.

**Official format** (read in ``DataHandler.py`` of LZH-YS1998/STHSL, the ST-HSL code whose CHI/NYC tensors the
crime papers share): a folder with ``trn.pkl``, ``val.pkl`` and ``tst.pkl``, each a pickled NumPy array of shape
``(rows, cols, days, categories)`` (CHI 14×12 grid, NYC 16×16, 4 categories), consecutive in time. Regions are
the ``rows*cols`` grid cells. The files carry no context factors and no dates.

**Synthetic city** (:func:`generate_city`): daily counts Y_{n,c,t} ~ Poisson(exp(λ_{n,c,t})) with

    λ_{n,c,t} = b_{n,c}(t) + 0.25 sin(2π dow_t / 7 + φ_c) + κ tanh(Σ_m u_{n,m} β_{c,m}(t) S_{n,m,t-1} / 2),

context factors S (m = 0 points of interest: static per region; 1 complaints: AR(1) per region; 2 weather: one
city-wide seasonal signal plus noise; 3 events: sparse region spikes), each standardised; region sensitivities
u_{n,m} ~ U(0.3, 1.7) and category effects β_{c,m} ~ N(0, 1) (dual-specific effects); κ = ``context_effect``
bounds the context's share of the log-rate (tanh keeps the counts free of a heavy tail).
Concept drift: at ``abrupt_day`` every b_{n,c} jumps by ±``drift_size`` (random sign) and β_{0,·} flips sign; from
``gradual_start`` to ``gradual_end`` the b_{n,c} move linearly by a further ±``drift_size``.

Shape glossary: ``N`` regions, ``C`` categories, ``M`` context factors, ``T`` days, ``W`` window days, ``S``
target days.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from iclr26.sthhol.model import Batch

__all__ = [
    "CONTEXT_FACTORS",
    "City",
    "WindowedCity",
    "generate_city",
    "load_official",
    "validate_city_arrays",
    "windows",
]

CONTEXT_FACTORS = ("poi", "complaints", "weather", "events")
OFFICIAL_SPLITS = ("trn.pkl", "val.pkl", "tst.pkl")
#: Bounds of λ before the Poisson draw (keeps exp(λ) finite and the counts free of a heavy tail).
LOG_RATE_CLIP = (-10.0, 4.0)


@dataclass(frozen=True)
class City:
    """A city's daily data.

    Attributes:
        counts: ``(N, C, T)`` non-negative crime counts.
        context: ``(N, M, T)`` context factors (M = 0 when the data have none).
        log_rate: ``(N, C, T)`` the generator's λ (None for real data).
        drift_days: the days at which drift starts (abrupt day, gradual start), empty if none.
        dow: ``(T,)`` day of week 0..6.
        month: ``(T,)`` month 0..11 (30-day months from day 0).
    """

    counts: np.ndarray
    context: np.ndarray
    log_rate: np.ndarray | None
    drift_days: tuple[int, ...]
    dow: np.ndarray
    month: np.ndarray

    @property
    def expected_counts(self) -> np.ndarray | None:
        """``(N, C, T)`` the generator's expected counts exp(λ) (None for real data)."""
        return None if self.log_rate is None else np.exp(np.clip(self.log_rate, *LOG_RATE_CLIP))

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """``(N, C, M, T)``."""
        n, c, t = self.counts.shape
        return n, c, self.context.shape[1], t


def validate_city_arrays(counts: np.ndarray, context: np.ndarray, *, name: str = "counts") -> None:
    """Reject what a forecaster cannot train on.

    Raises:
        ValueError: naming ``name`` (or ``context``) for a wrong rank, mismatched regions/days, NaN/inf, or
            negative counts.
    """
    if counts.ndim != 3:
        raise ValueError(f"{name} must be (regions, categories, days), got shape {counts.shape}")
    if context.ndim != 3 or context.shape[0] != counts.shape[0] or context.shape[2] != counts.shape[2]:
        raise ValueError(f"context must be ({counts.shape[0]}, M, {counts.shape[2]}), got shape {context.shape}")
    if not np.isfinite(counts).all():
        raise ValueError(f"{name} contains NaN or inf")
    if (counts < 0).any():
        raise ValueError(f"{name} contains negative counts (min {counts.min()})")
    if not np.isfinite(context).all():
        raise ValueError("context contains NaN or inf")


def _calendar(n_days: int) -> tuple[np.ndarray, np.ndarray]:
    days = np.arange(n_days)
    return days % 7, (days // 30) % 12


def generate_city(
    *,
    n_regions: int,
    n_categories: int,
    n_days: int,
    base_rate: float,
    context_effect: float,
    drift: bool,
    abrupt_day: int,
    gradual_start: int,
    gradual_end: int,
    drift_size: float,
    seed: int,
) -> City:
    """A synthetic city (see the module docstring for the model).

    Args:
        n_regions: ``N``.
        n_categories: ``C``.
        n_days: ``T``.
        base_rate: the typical daily count exp(mean b_{n,c}).
        context_effect: κ, the scale of the context effects (0: the context does not affect crime).
        drift: inject the abrupt and gradual drift.
        abrupt_day: day of the abrupt drift.
        gradual_start: first day of the gradual drift.
        gradual_end: day the gradual drift is complete.
        drift_size: size of each drift in log-rate.
        seed: the random seed.

    Raises:
        ValueError: naming the argument for sizes < 1, a non-positive rate, negative effects, or drift days
            outside ``(0, n_days)`` or out of order.
    """
    for arg, value in (("n_regions", n_regions), ("n_categories", n_categories), ("n_days", n_days)):
        if value < 1:
            raise ValueError(f"{arg} must be >= 1, got {value}")
    if not base_rate > 0:
        raise ValueError(f"base_rate must be > 0, got {base_rate}")
    if context_effect < 0 or drift_size < 0:
        raise ValueError(f"context_effect and drift_size must be >= 0, got {context_effect}, {drift_size}")
    if drift and not 0 < abrupt_day < n_days:
        raise ValueError(f"abrupt_day must lie in (0, n_days={n_days}), got {abrupt_day}")
    if drift and not 0 < gradual_start < gradual_end <= n_days:
        raise ValueError(f"need 0 < gradual_start < gradual_end <= n_days, got {gradual_start}, {gradual_end}")
    rng = np.random.default_rng(seed)
    n, c, t, m = n_regions, n_categories, n_days, len(CONTEXT_FACTORS)
    dow, month = _calendar(t)
    ctx = np.zeros((n, m, t))
    ctx[:, 0] = rng.normal(size=(n, 1))  # points of interest: static per region
    noise = rng.normal(size=(n, t))
    for day in range(t):  # complaints: AR(1), rho = 0.7
        ctx[:, 1, day] = (0.7 * ctx[:, 1, day - 1] if day else 0.0) + noise[:, day]
    ctx[:, 2] = np.sin(2 * np.pi * np.arange(t) / 60.0) + 0.5 * rng.normal(size=(1, t))  # weather, city-wide
    ctx[:, 3] = 3.0 * (rng.random((n, t)) < 0.08)  # events: sparse spikes
    ctx = (ctx - ctx.mean(axis=(0, 2), keepdims=True)) / ctx.std(axis=(0, 2), keepdims=True).clip(1e-6)
    base = np.log(base_rate) + 0.5 * rng.normal(size=(n, c, 1)) * np.ones((1, 1, t))
    beta = np.repeat(rng.normal(size=(c, m, 1)), t, axis=2)  # (C, M, T)
    sensitivity = rng.uniform(0.3, 1.7, size=(n, m))
    # drawn whether or not drift is injected, so a city with and one without drift share every other draw
    jump = drift_size * rng.choice([-1.0, 1.0], size=(n, c, 1))
    slope = drift_size * rng.choice([-1.0, 1.0], size=(n, c, 1))
    drift_days: tuple[int, ...] = ()
    if drift:
        base[:, :, abrupt_day:] += jump
        beta[0, :, abrupt_day:] *= -1.0
        ramp = np.clip((np.arange(t) - gradual_start) / (gradual_end - gradual_start), 0.0, 1.0)
        base += slope * ramp
        drift_days = (abrupt_day, gradual_start)
    phase = rng.uniform(0, 2 * np.pi, size=(1, c, 1))
    weekly = 0.25 * np.sin(2 * np.pi * dow[None, None, :] / 7 + phase)
    lagged = np.concatenate([np.zeros((n, m, 1)), ctx[:, :, :-1]], axis=2)  # S_{n,m,t-1}
    effect = np.tanh(np.einsum("nm,cmt,nmt->nct", sensitivity, beta, lagged) / 2.0)
    log_rate = base + weekly + context_effect * effect
    counts = rng.poisson(np.exp(np.clip(log_rate, *LOG_RATE_CLIP))).astype(np.float32)
    return City(counts, ctx.astype(np.float32), log_rate, drift_days, dow, month)


#: NumPy's modules as pickles name them: NumPy 2 writes ``numpy._core.*``; NumPy 1.x (the official STHSL tensors)
#: wrote ``numpy.core.*``, which NumPy 2 keeps only as a deprecated alias, so those names resolve to ``numpy._core``.
_NUMPY_MODULES = {
    "numpy._core.multiarray": "numpy._core.multiarray",
    "numpy._core._multiarray_umath": "numpy._core._multiarray_umath",
    "numpy._core.numeric": "numpy._core.numeric",
    "numpy.core.multiarray": "numpy._core.multiarray",
    "numpy.core._multiarray_umath": "numpy._core._multiarray_umath",
    "numpy.core.numeric": "numpy._core.numeric",
}


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles NumPy arrays only: any other global in the file is refused (a pickle can run code).

    Allowed: the array and dtype classes, NumPy's array/scalar reconstructors under the module names NumPy 1.x and 2
    write, and ``_codecs.encode``, which protocol-2 pickles use to carry the array's bytes.
    """

    ALLOWED = {
        ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
        *((module, name) for module in _NUMPY_MODULES if not module.endswith(".numeric")
          for name in ("_reconstruct", "scalar")),
        *((module, "_frombuffer") for module in _NUMPY_MODULES if module.endswith(".numeric")),
    }  # fmt: skip

    def find_class(self, module: str, name: str) -> type:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}: only NumPy arrays are accepted")
        return super().find_class(_NUMPY_MODULES.get(module, module), name)


def _read_array(path: Path) -> np.ndarray:
    try:
        obj = _ArrayUnpickler(io.BytesIO(path.read_bytes())).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise ValueError(f"{path}: not a pickled NumPy array ({err})") from None
    if not isinstance(obj, np.ndarray) or obj.ndim != 4 or obj.dtype.kind not in "iuf":
        got = f"shape {obj.shape} dtype {obj.dtype}" if isinstance(obj, np.ndarray) else type(obj).__name__
        raise ValueError(f"{path}: expected a numeric array (rows, cols, days, categories), got {got}")
    return obj


def load_official(path: str | Path) -> City:
    """Read a city in the official format: a folder with ``trn.pkl``/``val.pkl``/``tst.pkl`` (concatenated in
    that order along days), or one such ``.pkl`` file.

    Args:
        path: the folder or file.

    Returns:
        A :class:`City` with ``N = rows*cols`` regions, no context factors (M = 0) and no drift days.

    Raises:
        FileNotFoundError: if ``path`` or one of the three files in a folder is missing.
        ValueError: for a file that is not a pickled 4-D numeric array, splits of different grids or categories,
            NaN/inf or negative counts.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if path.is_dir():
        missing = [f for f in OFFICIAL_SPLITS if not (path / f).is_file()]
        if missing:
            raise FileNotFoundError(f"{path} lacks {', '.join(missing)} (expected trn.pkl, val.pkl, tst.pkl)")
        parts = [_read_array(path / f) for f in OFFICIAL_SPLITS]
    else:
        parts = [_read_array(path)]
    grids = {(p.shape[0], p.shape[1], p.shape[3]) for p in parts}
    if len(grids) != 1:
        raise ValueError(f"{path}: the splits differ in grid or categories: {sorted(grids)}")
    arr = np.concatenate(parts, axis=2).astype(np.float32)  # (rows, cols, T, C)
    rows, cols, t, c = arr.shape
    counts = np.ascontiguousarray(arr.reshape(rows * cols, t, c).transpose(0, 2, 1))  # (N, C, T)
    context = np.zeros((rows * cols, 0, t), dtype=np.float32)
    validate_city_arrays(counts, context, name=f"{path}")
    dow, month = _calendar(t)
    return City(counts, context, None, (), dow, month)


@dataclass(frozen=True)
class WindowedCity:
    """Every (window, target day) pair of a city as tensors, indexed by target day ``t >= W``.

    Attributes:
        crime: ``(T, N, C, W)``; row t holds days t-W..t-1 (rows t < W are zero and never used).
        context: ``(T, N, M, W)``.
        target: ``(T, N, C)`` counts of day t.
        dow: ``(T,)``.
        month: ``(T,)``.
        window: ``W``.
    """

    crime: Tensor
    context: Tensor
    target: Tensor
    dow: Tensor
    month: Tensor
    window: int

    def batch(self, days: Tensor) -> Batch:
        """The :class:`Batch` of target ``days`` (each ``>= W``)."""
        if days.numel() and int(days.min()) < self.window:
            raise ValueError(f"days must be >= window={self.window}, got {int(days.min())}")
        return Batch(self.crime[days], self.context[days], self.dow[days], self.month[days], self.target[days])


def windows(city: City, window: int) -> WindowedCity:
    """Slice ``city`` into input windows of ``window`` days.

    Raises:
        ValueError: if ``window < 1`` or the city has at most ``window`` days.
    """
    n, c, m, t = city.shape
    if window < 1 or t <= window:
        raise ValueError(f"window must lie in [1, days-1={t - 1}], got {window}")
    counts = torch.from_numpy(city.counts)
    ctx = torch.from_numpy(city.context)
    crime = torch.zeros(t, n, c, window)
    context = torch.zeros(t, n, m, window)
    for day in range(window, t):
        crime[day] = counts[:, :, day - window : day]
        context[day] = ctx[:, :, day - window : day]
    return WindowedCity(
        crime, context, counts.permute(2, 0, 1).contiguous(), torch.from_numpy(city.dow).long(),
        torch.from_numpy(city.month).long(), window,
    )  # fmt: skip
