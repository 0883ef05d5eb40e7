"""LoRA adapters (Hu et al., ICLR 2022, "LoRA: Low-Rank Adaptation of Large Language Models") on a
:class:`~iclr26.common.pretrained.model.PretrainedLM`, through ``peft``: attach, save, load, merge, switch off.

The adapted layer computes ``W x + (α/r)·B A x`` with ``B = 0`` at the start, so the adapted model starts as the
base model; only ``A`` and ``B`` train.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch

from iclr26.common.pretrained.model import PretrainedLM
from iclr26.common.pretrained.weights import require_peft

__all__ = ["LLAMA_LINEAR", "adapters_disabled", "add_lora", "load_adapter", "merge_lora", "save_adapter"]

# QLoRA (Dettmers et al., 2023, §4): adapters on every linear layer are needed to match full fine-tuning
LLAMA_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def add_lora(
    lm: PretrainedLM,
    *,
    r: int = 8,
    alpha: float = 16.0,
    dropout: float = 0.0,
    target_modules: Sequence[str] = LLAMA_LINEAR,
    seed: int = 0,
) -> PretrainedLM:
    """Attach LoRA adapters (Hu et al., 2022; ``peft``) in place: ``W x + (α/r)·B A x``, ``B = 0`` at start.

    Only the adapters train; the base weights are frozen. ``A``'s initialisation draws from torch's generator
    re-seeded with ``seed`` inside ``fork_rng``.

    Args:
        lm: a model without adapters (it is modified and returned).
        r: adapter rank.
        alpha: scale numerator ``α`` (the update is scaled by ``α / r``).
        dropout: dropout on the adapter input.
        target_modules: names of the linear layers to adapt (default: all seven of a Llama block, as QLoRA §4).
        seed: seed of the adapter initialisation.

    Returns:
        ``lm``, whose ``model`` is now a ``peft`` model.

    Raises:
        ValueError: if ``lm`` already has adapters or ``r < 1``.
    """
    peft = require_peft()
    if lm.has_lora:
        raise ValueError("lm already has LoRA adapters; merge_lora(lm) first or load a fresh model")
    if r < 1:
        raise ValueError(f"r must be >= 1, got {r}")
    config = peft.LoraConfig(
        r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(target_modules), task_type="CAUSAL_LM"
    )
    device = lm.device
    # the caller's generators (the CPU's and that of the model's CUDA device) are restored afterwards
    with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []), _quiet_peft():
        torch.manual_seed(seed)
        lm.model = peft.get_peft_model(lm.model, config)
    lm.model.eval()
    return lm


@contextmanager
def _quiet_peft() -> Iterator[None]:
    """peft calls a transformers helper that transformers 5 deprecates (``is_gradient_checkpointing``); nothing a
    user can act on, so that one warning is silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        yield


def save_adapter(lm: PretrainedLM, path: str | Path) -> Path:
    """Write ``lm``'s LoRA adapters (only) to the folder ``path``; returns it.

    Raises:
        ValueError: if ``lm`` has no adapters.
    """
    if not lm.has_lora:
        raise ValueError("lm has no LoRA adapters to save; add_lora(lm) first")
    lm.model.save_pretrained(Path(path))
    return Path(path)


def load_adapter(lm: PretrainedLM, path: str | Path, *, trainable: bool = False) -> PretrainedLM:
    """Attach adapters saved by :func:`save_adapter` to ``lm`` (a model without adapters), in place.

    Args:
        lm: the base model the adapters were trained on.
        path: the adapter folder.
        trainable: keep the adapters trainable (to continue training).

    Returns:
        ``lm``.

    Raises:
        FileNotFoundError: if ``path`` holds no ``adapter_config.json``.
        ValueError: if ``lm`` already has adapters.
    """
    peft = require_peft()
    if lm.has_lora:
        raise ValueError("lm already has LoRA adapters; load the adapter onto a fresh base model")
    if not (Path(path) / "adapter_config.json").is_file():
        raise FileNotFoundError(f"path {str(path)!r} holds no adapter_config.json; pass a folder from save_adapter")
    with _quiet_peft():
        lm.model = peft.PeftModel.from_pretrained(lm.model, Path(path), is_trainable=trainable)
    lm.model.eval()
    return lm


def merge_lora(lm: PretrainedLM) -> PretrainedLM:
    """Fold the adapters into the base weights (``W ← W + (α/r)·B A``) and drop them, in place; returns ``lm``."""
    if not lm.has_lora:
        raise ValueError("lm has no LoRA adapters to merge")
    lm.model = lm.model.merge_and_unload()
    return lm


@contextmanager
def adapters_disabled(lm: PretrainedLM) -> Iterator[None]:
    """Inside the block ``lm`` is its base model (LoRA adapters switched off); a model without adapters is itself."""
    with lm.model.disable_adapter() if lm.has_lora else nullcontext():
        yield
