"""Choosing the torch device of a run from a config string, with no silent fallback."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr26.common.config import ConfigError

if TYPE_CHECKING:
    import torch


def resolve_device(name: str) -> torch.device:
    """The device a config's ``device`` field names.

    Args:
        name: ``"cpu"``, ``"cuda"`` / ``"cuda:N"``, or ``"auto"`` (CUDA when available, else the CPU — an explicit
            request for either, not a fallback).

    Returns:
        The ``torch.device``.

    Raises:
        ConfigError: naming the ``device`` field when CUDA is requested but unavailable, or the name is unknown.
    """
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"config field 'device': unknown device {name!r}; use cpu, cuda, cuda:N or auto") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"config field 'device': {name!r} requested but CUDA is not available here; use --set device=cpu"
        )
    if device.type not in ("cpu", "cuda"):
        raise ConfigError(f"config field 'device': unsupported device type {device.type!r}; use cpu or cuda")
    return device
