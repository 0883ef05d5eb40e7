"""Task arithmetic on model weights (Ilharco et al., ICLR 2023, "Editing Models with Task Arithmetic"):
``τ = θ_ft − θ_base`` and ``θ ← θ + λ·τ``, with LoRA adapters folded in first.
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from iclr26.common.pretrained.model import PretrainedLM

__all__ = ["apply_task_vector", "merged_weights", "task_vector"]


def merged_weights(model: PretrainedLM | nn.Module) -> dict[str, Tensor]:
    """The model's parameters by name (tied weights once), with LoRA adapters folded in if it has any.

    The model itself is not changed (adapters are merged on a copy).
    """
    net = model.model if isinstance(model, PretrainedLM) else model
    if hasattr(net, "peft_config"):
        net = copy.deepcopy(net).merge_and_unload()
    return {name: p.detach() for name, p in net.named_parameters()}


def task_vector(finetuned: PretrainedLM | nn.Module, base: PretrainedLM | nn.Module) -> dict[str, Tensor]:
    """The task vector ``τ = θ_ft − θ_base`` (Ilharco et al., ICLR 2023, "Editing Models with Task Arithmetic").

    Args:
        finetuned: the fine-tuned model (LoRA adapters are merged on a copy first).
        base: the model it was fine-tuned from.

    Returns:
        ``{parameter name: float32 difference}``, tied parameters once.

    Raises:
        ValueError: if the two models' parameter names or shapes differ.
    """
    ft, b = merged_weights(finetuned), merged_weights(base)
    if ft.keys() != b.keys():
        raise ValueError(f"models differ in parameters: {sorted(ft.keys() ^ b.keys())[:5]} ...")
    for name in ft:
        if ft[name].shape != b[name].shape:
            raise ValueError(f"parameter {name}: shapes {tuple(ft[name].shape)} vs {tuple(b[name].shape)}")
    return {name: ft[name].float() - b[name].float() for name in ft}


def apply_task_vector(model: PretrainedLM | nn.Module, vector: dict[str, Tensor], *, scale: float = 1.0) -> None:
    """``θ ← θ + λ·τ`` in place (``λ = scale``: 1 adds a task, −1 negates it; sums of vectors compose tasks).

    The update is computed in float32 and rounded once to the parameter's dtype.

    Args:
        model: a model without LoRA adapters (:func:`merge_lora` first).
        vector: from :func:`task_vector` (a subset of the parameters is allowed).
        scale: ``λ``.

    Raises:
        ValueError: for a model with adapters, or a name or shape not in the model.
    """
    net = model.model if isinstance(model, PretrainedLM) else model
    if hasattr(net, "peft_config"):
        raise ValueError("apply_task_vector needs a model without LoRA adapters; merge_lora(lm) first")
    params = dict(net.named_parameters())
    for name, delta in vector.items():
        if name not in params or params[name].shape != delta.shape:
            raise ValueError(f"task vector entry {name} {tuple(delta.shape)} does not match the model")
    with torch.no_grad():
        for name, delta in vector.items():
            p = params[name]
            p.copy_((p.float() + scale * delta.to(p.device)).to(p.dtype))
