"""The one log-probability function of the package: ``log π(c_t | p, c_<t)`` of completions given prompts.

Scoring, SFT, DPO and GRPO all go through :func:`completion_token_logprobs`. Each ``prompt + completion`` is
left-padded into micro-batches (positions count real tokens only, so a padded row sees the positions an unpadded
one would), and only the positions that predict a completion token go through the output layer
(``logits_to_keep``, :func:`logits_to_keep`). Given an int, ``transformers`` slices the hidden states into a
strided view; when that view carries a gradient, the output projection over it runs as a batched multiply that
copies the embedding matrix once per row, which in bfloat16 dominates a training step. So a bfloat16 (or float16)
model gets the positions as an index tensor, and the projection runs over a contiguous ``(n, T + 1, D)`` block with
bit-identical log-probs. A float32 model keeps the int: the batched multiply's float32 sums differ in their last
bits from the contiguous multiply's for short micro-batches, so the index tensor would change float32 training
results, which stay bit for bit as they were (float32 is not the default, and gains less from the index tensor).

A half-precision model on the CPU runs these forwards with
:func:`~iclr26.common.pretrained.attention.fused_forward_explicit_backward` (:func:`scoring_attention`): ``sdpa``'s
forward, and a backward from the recomputed softmax, which at the lengths scored here takes a fraction of the time
of torch's CPU flash-attention backward. Forwards without a gradient are ``sdpa``'s, bit for bit.

Shape glossary: ``N`` sequences, ``n`` sequences of one micro-batch, ``T`` completion tokens (the longest),
``L`` packed length, ``V`` vocabulary, ``D`` width.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from iclr26.common.pretrained.attention import register as register_attention

__all__ = ["TokenLogprobs", "completion_token_logprobs", "logits_to_keep", "pack_left", "scoring_attention"]


@dataclass(frozen=True)
class TokenLogprobs:
    """Per-token log-probabilities of given completions.

    Attributes:
        logprobs: ``(N, T)`` float32, ``log π(c_t | prompt, c_<t)``; token ``t`` of completion ``i`` at ``[i, t]``,
            0 at padding.
        mask: ``(N, T)`` bool, true on real completion tokens.
    """

    logprobs: Tensor
    mask: Tensor

    @property
    def total(self) -> Tensor:
        """``(N,)`` summed log-probability of each completion (0 for an empty one)."""
        return (self.logprobs * self.mask).sum(dim=1)

    @property
    def n_tokens(self) -> Tensor:
        """``(N,)`` completion lengths."""
        return self.mask.sum(dim=1)


def pack_left(rows: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """Left-pad id lists into ``(input_ids, attention_mask, position_ids)``, each ``(N, L)``, on ``device``.

    Positions count real tokens only, so a left-padded row sees the positions an unpadded one would.
    """
    length = max(len(r) for r in rows)
    ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), length), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, length - len(row) :] = torch.as_tensor(row, dtype=torch.long)
            attention[i, length - len(row) :] = 1
    positions = (attention.cumsum(dim=1) - 1).clamp_min(0)
    return ids.to(device), attention.to(device), positions.to(device)


def logits_to_keep(model: nn.Module, length: int, count: int) -> int | Tensor:
    """The last ``count`` of ``length`` positions as ``logits_to_keep`` takes them: an index tensor on the model's
    device for a model in a half precision (a contiguous projection input), the int ``count`` for float32 (see the
    module docstring)."""
    param = next(model.parameters())
    if param.dtype == torch.float32:
        return count
    return torch.arange(length - count, length, device=param.device)


@contextmanager
def scoring_attention(model: nn.Module) -> Iterator[None]:
    """Inside: a ``transformers`` model (also under ``peft`` or a data-parallel wrapper) in half precision on the
    CPU attends through :func:`~iclr26.common.pretrained.attention.fused_forward_explicit_backward` (see the module
    docstring); any other model keeps its attention implementation."""
    param = next(model.parameters())
    # the outermost transformers model; its set_attn_implementation reaches the inner models
    net = next((m for m in model.modules() if hasattr(m, "set_attn_implementation")), None)
    if net is None or param.dtype == torch.float32 or param.device.type != "cpu":
        yield
        return
    saved = net.config._attn_implementation
    net.set_attn_implementation(register_attention())
    try:
        yield
    finally:
        net.set_attn_implementation(saved)


def completion_token_logprobs(
    model: nn.Module,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    *,
    pad_token_id: int,
    micro_batch_size: int = 16,
) -> TokenLogprobs:
    """``log π(c_t | p, c_<t)`` for every completion token, in float32 from the model's logits.

    Carries the gradient unless called under ``torch.no_grad()``.

    Args:
        model: a causal LM (``transformers`` or ``peft``, or a data-parallel wrapper of one) taking
            ``input_ids``, ``attention_mask``, ``position_ids`` and ``logits_to_keep``.
        prompt_ids: ``N`` non-empty id lists.
        completion_ids: ``N`` id lists (may be empty).
        pad_token_id: the id used for padding (never scored).
        micro_batch_size: sequences per forward pass.

    Returns:
        :class:`TokenLogprobs` with ``T`` the longest completion, on the model's device.

    Raises:
        ValueError: if the lists differ in length, a prompt is empty, or ``micro_batch_size < 1``.
    """
    if len(prompt_ids) != len(completion_ids):
        raise ValueError(f"prompt_ids ({len(prompt_ids)}) and completion_ids ({len(completion_ids)}) differ in length")
    if any(len(p) == 0 for p in prompt_ids):
        raise ValueError("every prompt needs at least one token (the first completion token is predicted from it)")
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    device = next(model.parameters()).device
    n, width = len(prompt_ids), max((len(c) for c in completion_ids), default=0)
    lengths = torch.as_tensor([len(c) for c in completion_ids], dtype=torch.long)
    mask = (torch.arange(width)[None, :] < lengths[:, None]).to(device)  # (N, T)
    if n == 0:
        return TokenLogprobs(logprobs=torch.zeros((0, 0), device=device), mask=mask)
    chunks = []
    for start in range(0, n, micro_batch_size):
        rows = range(start, min(start + micro_batch_size, n))
        t_mb = max(len(completion_ids[i]) for i in rows)
        if t_mb == 0:
            chunks.append(torch.zeros((len(rows), width), device=device))
            continue
        ids, attention, positions = pack_left(
            [list(prompt_ids[i]) + list(completion_ids[i]) for i in rows], pad_token_id, device
        )
        # the last T_mb + 1 positions: position j predicts token j + 1
        keep = logits_to_keep(model, ids.shape[1], t_mb + 1)
        with scoring_attention(model):
            # no key/value cache: nothing is decoded after this forward, and filling one costs a copy per layer
            logits = model(
                input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=keep, use_cache=False
            ).logits
        logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # (n, T_mb, V)
        right = logp.gather(-1, ids[:, -t_mb:, None]).squeeze(-1)  # (n, T_mb), completion i on its last c_i columns
        mb_lengths = lengths[rows.start : rows.stop].to(device)
        cols = torch.arange(t_mb, device=device)
        # left-align: column t of row i reads column T_mb − c_i + t
        index = (t_mb - mb_lengths[:, None] + cols[None, :]).clamp(0, t_mb - 1)  # (n, T_mb)
        aligned = right.gather(1, index).masked_fill(cols[None, :] >= mb_lengths[:, None], 0.0)
        chunks.append(torch.nn.functional.pad(aligned, (0, width - t_mb)))
    return TokenLogprobs(logprobs=torch.cat(chunks, dim=0), mask=mask)
