"""Rollouts for policy-gradient steps: ``G`` sampled completions per prompt with the log-probs a step needs.

:func:`sample_rollout` is step 1 of a GRPO iteration (DeepSeekMath, Shao et al., 2024, §4.1): sample from the
current policy, keep ``log π_θ_old`` of every completion token, and, for a KL term, ``log π_ref`` under a reference
model. :func:`score_rollout` builds the same from given ids. Rows are row-major: sample ``g`` of prompt ``q`` is row
``q·G + g``.

Shape glossary: ``Q`` prompts, ``G`` samples per prompt, ``N = Q·G`` rows, ``T`` the longest completion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor, nn

from iclr26.common.pretrained.lora import adapters_disabled
from iclr26.common.pretrained.model import PretrainedLM, Prompt
from iclr26.common.pretrained.scoring import TokenLogprobs, completion_token_logprobs

__all__ = ["Rollout", "sample_rollout", "score_rollout"]


@dataclass(frozen=True)
class Rollout:
    """Sampled completions of ``Q`` prompts × ``G`` samples with the log-probs a GRPO step needs.

    Rows are row-major (``q·G + g``). Attributes:
        prompt_ids: ``N`` prompt id lists.
        completion_ids: ``N`` completion id lists.
        texts: ``N`` completion texts (what a reward reads).
        group_size: ``G``.
        logp_old: ``(N, T)`` float32 per-token log-probs under the sampling policy ``π_θ_old`` (no gradient).
        mask: ``(N, T)`` bool, true on completion tokens.
        logp_ref: ``(N, T)`` log-probs under the reference policy, or ``None``.
        finish_reasons: ``N`` of ``"eos"``/``"stop"``/``"length"``.
    """

    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    texts: list[str]
    group_size: int
    logp_old: Tensor
    mask: Tensor
    logp_ref: Tensor | None = None
    finish_reasons: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = len(self.prompt_ids)
        if self.group_size < 1 or n % self.group_size:
            raise ValueError(f"group_size {self.group_size} must divide the number of rows {n}")
        if len(self.completion_ids) != n or self.logp_old.shape != self.mask.shape or self.logp_old.shape[0] != n:
            raise ValueError(
                f"rollout fields disagree: {n} prompts, {len(self.completion_ids)} completions, logp_old "
                f"{tuple(self.logp_old.shape)}, mask {tuple(self.mask.shape)}"
            )
        if self.logp_ref is not None and self.logp_ref.shape != self.mask.shape:
            raise ValueError(f"logp_ref must have shape {tuple(self.mask.shape)}, got {tuple(self.logp_ref.shape)}")


def score_rollout(
    lm: PretrainedLM,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    *,
    group_size: int,
    texts: Sequence[str] | None = None,
    reference: PretrainedLM | Literal["base"] | None = None,
    finish_reasons: Sequence[str] = (),
    micro_batch_size: int = 16,
) -> Rollout:
    """Build a :class:`Rollout` from given ids: ``logp_old`` under ``lm`` now, ``logp_ref`` under ``reference``.

    Args:
        lm: the policy that sampled the completions.
        prompt_ids: ``N`` prompt id lists (row-major groups).
        completion_ids: ``N`` completion id lists.
        group_size: ``G``.
        texts: completion texts (default: decoded from the ids).
        reference: ``None`` (no KL term), ``"base"`` (``lm`` with its LoRA adapters disabled) or a frozen
            :class:`PretrainedLM` with the same tokenizer.
        finish_reasons: carried into the rollout.
        micro_batch_size: sequences per forward pass.

    Returns:
        :class:`Rollout`.
    """
    if reference == "base" and not lm.has_lora:
        raise ValueError("reference='base' means lm with its LoRA adapters disabled, but lm has none")

    def score(model: nn.Module) -> TokenLogprobs:
        return completion_token_logprobs(
            model, prompt_ids, completion_ids, pad_token_id=lm.pad_token_id, micro_batch_size=micro_batch_size
        )

    with torch.no_grad():
        old = score(lm.model)
        if reference == "base":
            with adapters_disabled(lm):
                logp_ref = score(lm.model).logprobs
        else:
            logp_ref = None if reference is None else score(reference.model).logprobs.to(old.logprobs.device)
    if texts is None:
        texts = [lm.tokenizer.decode([t for t in c if t not in lm.eos_token_ids]) for c in completion_ids]
    return Rollout(
        prompt_ids=[list(p) for p in prompt_ids],
        completion_ids=[list(c) for c in completion_ids],
        texts=list(texts),
        group_size=group_size,
        logp_old=old.logprobs,
        mask=old.mask,
        logp_ref=logp_ref,
        finish_reasons=list(finish_reasons),
    )


def sample_rollout(
    lm: PretrainedLM,
    prompts: Sequence[Prompt],
    *,
    group_size: int,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_p: float = 1.0,
    seed: int = 0,
    stop: Sequence[str] = (),
    chat: bool = True,
    reference: PretrainedLM | Literal["base"] | None = None,
    batch_size: int = 32,
    micro_batch_size: int = 16,
    prompt_seeds: Sequence[int] | None = None,
) -> Rollout:
    """Step 1 of a GRPO iteration: sample ``G`` completions per prompt and score them (:func:`score_rollout`).

    With ``prompt_seeds`` each prompt's ``G`` completions are drawn in a generation call of their own, seeded with
    the prompt's seed (``seed`` is then unused): a prompt's completions depend only on the policy, the prompt and
    its seed, not on which other prompts share the batch. That is what data parallelism needs: a rank that samples
    its shard of the prompts with their global seeds draws exactly what one process drawing the whole batch this
    way would.

    Args:
        lm: the current policy ``π_θ`` (kept as ``π_θ_old`` through ``logp_old``).
        prompts: ``Q`` prompts.
        group_size: ``G`` samples per prompt.
        max_new_tokens, temperature, top_p, seed, stop, chat, batch_size: as :meth:`PretrainedLM.generate`.
        reference: as :func:`score_rollout`.
        micro_batch_size: sequences per scoring forward pass.
        prompt_seeds: one sampling seed per prompt (see above); ``None``: one stream, ``seed``, for the batch.

    Returns:
        :class:`Rollout` with ``N = Q·G`` rows.
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    if prompt_seeds is not None:
        if len(prompt_seeds) != len(prompts):
            raise ValueError(f"prompt_seeds: one seed per prompt expected ({len(prompts)}), got {len(prompt_seeds)}")
        kwargs = dict(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, stop=stop, chat=chat)
        parts = [
            lm.generate([p] * group_size, seed=int(s), batch_size=batch_size, **kwargs)
            for p, s in zip(prompts, prompt_seeds, strict=True)
        ]
        return score_rollout(
            lm,
            [ids for g in parts for ids in g.prompt_ids],
            [ids for g in parts for ids in g.completion_ids],
            group_size=group_size,
            texts=[t for g in parts for t in g.texts],
            reference=reference,
            finish_reasons=[r for g in parts for r in g.finish_reasons],
            micro_batch_size=micro_batch_size,
        )
    repeated = [p for p in prompts for _ in range(group_size)]
    gen = lm.generate(
        repeated,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        stop=stop,
        chat=chat,
        batch_size=batch_size,
    )
    return score_rollout(
        lm,
        gen.prompt_ids,
        gen.completion_ids,
        group_size=group_size,
        texts=gen.texts,
        reference=reference,
        finish_reasons=gen.finish_reasons,
        micro_batch_size=micro_batch_size,
    )
