"""Seeding, once for the whole package: every random draw of a run derives from its master seed."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and PyTorch's global generators with ``seed``.

    Code in this package prefers explicit generators (:func:`torch_generator`, :func:`numpy_rng`); this call covers
    library code that draws from the global ones (e.g. ``nn.Linear`` initialisation).
    """
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def torch_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A fresh ``torch.Generator`` on ``device`` seeded with ``seed``."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def numpy_rng(seed: int) -> np.random.Generator:
    """A fresh NumPy ``Generator`` (PCG64) seeded with ``seed``."""
    return np.random.default_rng(seed)


def derive_seed(seed: int, *keys: int | str) -> int:
    """A child seed for a sub-task (e.g. ``derive_seed(seed, "eval", 3)``), stable across runs and platforms."""
    material = [
        seed,
        *[k if isinstance(k, int) else int.from_bytes(k.encode(), "little") % 2**63 for k in keys],
    ]
    return int(np.random.SeedSequence(material).generate_state(1, dtype=np.uint64)[0] % 2**63)
