"""BiasFreeBench's training baselines as functions over any causal LM from :mod:`iclr26.common.pretrained`.

The official runs (``Training/examples/debias/*.yaml`` and ``Task_Vector/test.py`` in xxupiano/BiasFreeBench):

* **SFT** (LoRA, all linear layers): the anti-stereotypical continuation as the target,
  ``L = −Σ_t log π_θ(y_t | x, y_<t) / #tokens``.
* **DPO** (LoRA, ``pref_loss: sigmoid``, ``pref_beta: 0.1``), chosen = anti-stereotype, rejected = stereotype
  (Rafailov et al., 2023, Eq. 7):
  ``L = −log σ(β [(log π_θ(y_w|x) − log π_ref(y_w|x)) − (log π_θ(y_l|x) − log π_ref(y_l|x))])``,
  log-probabilities summed over the response tokens, ``π_ref`` the model before training.
* **Task Vector** (Ilharco et al., 2023): fine-tune on the *stereotypical* outputs, ``τ = θ_ft − θ_pre``, and negate
  it: ``θ = θ_pre − λ τ`` with ``λ = 0.5`` (``scaling_coef=0.5`` in ``test.py``).

Schedule of every arm (the yaml files): AdamW, cosine decay after a linear warm-up over the first 10% of the steps
(3% for the task vector's SFT). Batches are drawn from a seeded permutation, epoch after epoch.

Deviations (the README's table): the Task Vector's fine-tuning is full fine-tuning in the paper and LoRA here (the
vector ``τ`` is then the merged low-rank update); the step counts and learning rate are sized for one CPU thread
(the paper: 20 epochs over 8,497 pairs at lr 8e-6); no validation split or best-checkpoint selection
(``val_size: 0.2``, ``load_best_model_at_end``).

Under ``torchrun`` (``world``, the run's :class:`~iclr26.common.distributed.World`, has several ranks)
:func:`train_pairs` is data parallel: every rank attaches the same adapters and draws the same global batch of pair
indices from the shared seed, keeps its contiguous shard (:func:`~iclr26.common.distributed.shard_range`), and
trains through DistributedDataParallel (:func:`iclr26.common.pretrained.distribute`, ``mode="ddp"``): SFT through
:func:`~iclr26.common.pretrained.sft_step` on the shard (global token counts), DPO through
:func:`~iclr26.common.pretrained.dpo_step`, whose micro-batch losses are weighted by their share of the *global*
batch, so DDP's gradient average is the full batch's gradient; reported losses, margins and accuracies are the global
batch's. After training the
DDP wrapper is dropped and generation, task-vector negation and evaluation run alike on every rank. The global batch
must split evenly over the ranks (every rank then makes the same number of micro-batch backward passes, each one a
collective).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from iclr26.biasfree.items import PreferencePair
from iclr26.biasfree.prompts import SYSTEM_PROMPT
from iclr26.common.distributed import SINGLE, World, shard_range
from iclr26.common.pretrained import (
    PretrainedLM,
    adapters_disabled,
    add_lora,
    apply_task_vector,
    completion_token_logprobs,
    distribute,
    dpo_step,
    sft_step,
    task_vector,
)

__all__ = [
    "TrainLog",
    "cosine_lr",
    "lora_targets",
    "negate_task_vector",
    "reference_logprobs",
    "train_pairs",
    "training_prompt",
]


def lora_targets(lm: PretrainedLM) -> list[str]:
    """The names of every linear layer of ``lm``'s network except its output head (LLaMA-Factory's
    ``lora_target: all``): for a Llama, ``q/k/v/o_proj`` and ``gate/up/down_proj``; for any other causal LM whatever
    its linear layers are called.

    Raises:
        ValueError: if the network has no linear layer besides its head.
    """
    head = lm.model.get_output_embeddings() if hasattr(lm.model, "get_output_embeddings") else None
    names = sorted({name.rsplit(".", 1)[-1] for name, mod in lm.model.named_modules()
                    if isinstance(mod, torch.nn.Linear) and mod is not head and name})  # fmt: skip
    if not names:
        raise ValueError(f"lm: {lm.source.name} has no linear layer to attach LoRA adapters to")
    return names


def training_prompt(prompt: str) -> list[dict[str, str]]:
    """The chat a training prompt is shown in: the evaluation's system prompt and the prompt as the user turn."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]


def reference_logprobs(lm: PretrainedLM, prompts: Sequence[str], responses: Sequence[str], *,
                       micro_batch_size: int = 16) -> Tensor:  # fmt: skip
    """``(N,)`` summed ``log π_ref(response | prompt)`` under ``lm`` with its LoRA adapters switched off (no grad);
    the response ends with the end-of-turn token, as in training."""
    with torch.no_grad(), adapters_disabled(lm):
        return completion_token_logprobs(
            lm.model,
            lm.encode_prompts([training_prompt(p) for p in prompts]),
            lm.encode_completions(list(responses), add_eos=True),
            pad_token_id=lm.pad_token_id,
            micro_batch_size=micro_batch_size,
        ).total.float()


def cosine_lr(step: int, total: int, *, warmup_ratio: float) -> float:
    """LR multiplier: linear warm-up over ``ceil(warmup_ratio·total)`` steps, then cosine decay to 0
    (``transformers``' ``get_cosine_schedule_with_warmup``, which LLaMA-Factory uses)."""
    warmup = math.ceil(warmup_ratio * total)
    if step < warmup:
        return (step + 1) / (warmup + 1)  # linear warm-up (the yaml's warmup_ratio: 10%, 3% for the task vector)
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))  # cosine decay to 0 (lr_scheduler_type: cosine)


@dataclass(frozen=True)
class TrainLog:
    """What a training arm did.

    Attributes:
        method: ``"sft"``, ``"dpo"`` or ``"stereo_sft"`` (the task vector's fine-tuning on stereotypes).
        steps: optimizer steps.
        losses: loss per step.
        margins: DPO only: mean reward margin per step.
        accuracies: DPO only: share of pairs with a positive margin per step.
        n_examples: distinct training examples.
    """

    method: str
    steps: int
    losses: list[float]
    margins: list[float] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)
    n_examples: int = 0


def _batches(n: int, batch_size: int, steps: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    order = np.array([], dtype=int)
    for _ in range(steps):
        while order.size < batch_size:
            order = np.concatenate([order, rng.permutation(n)])
        yield order[:batch_size]
        order = order[batch_size:]


def train_pairs(lm: PretrainedLM, pairs: Sequence[PreferencePair], *,
                method: Literal["sft", "dpo", "stereo_sft"], steps: int, batch_size: int, lr: float,
                warmup_ratio: float = 0.1, beta: float = 0.1, lora_r: int = 8, lora_alpha: float = 16.0,
                seed: int = 0, micro_batch_size: int = 8, world: World = SINGLE) -> TrainLog:  # fmt: skip
    """Attach LoRA adapters to ``lm`` (in place) and train one arm on ``pairs``.

    ``"sft"`` trains on ``chosen`` (anti-stereotype), ``"stereo_sft"`` on ``rejected`` (the task vector's
    fine-tuning), ``"dpo"`` on (chosen, rejected) with the DPO loss against ``lm`` before training.

    Args:
        lm: a model without adapters (modified in place: it has trained adapters afterwards).
        pairs: the training pairs.
        method: the arm.
        steps: optimizer steps.
        batch_size: pairs per step.
        lr: peak learning rate (AdamW, cosine schedule with warm-up).
        warmup_ratio: share of the steps spent warming up.
        beta: DPO's β.
        lora_r: LoRA rank (LLaMA-Factory's default 8).
        lora_alpha: LoRA α (LLaMA-Factory's default 2r).
        seed: adapter initialisation and batch order.
        micro_batch_size: sequences per forward/backward pass.
        world: the run's processes (``ctx.world``); under torchrun each rank trains on its shard of every global
            batch through DDP (module docstring).

    Returns:
        :class:`TrainLog`.

    Raises:
        ValueError: for an unknown method, no pairs, or non-positive steps/batch size/lr.
    """
    if method not in ("sft", "dpo", "stereo_sft"):
        raise ValueError(f"method must be 'sft', 'dpo' or 'stereo_sft', got {method!r}")
    if not pairs:
        raise ValueError("pairs must not be empty")
    if steps < 1 or batch_size < 1 or lr <= 0:
        raise ValueError(f"steps and batch_size must be >= 1 and lr > 0, got {steps}, {batch_size}, {lr}")
    rng = np.random.default_rng(seed)
    if world.is_distributed and batch_size % world.size:
        raise ValueError(f"batch_size={batch_size} must be a multiple of the {world.size} ranks under torchrun")
    add_lora(lm, r=lora_r, alpha=lora_alpha, seed=seed, target_modules=lora_targets(lm))
    if world.is_distributed:
        distribute(lm, mode="ddp", world=world)
    params = [p for p in lm.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: cosine_lr(s, steps, warmup_ratio=warmup_ratio))
    # π_ref = the model before training (adapters off), scored lazily for the pairs the steps draw: cheaper than
    # scoring every pair up front when the steps see fewer pairs than the data holds
    ref: dict[int, tuple[float, float]] = {}
    losses, margins, accs = [], [], []
    lm.model.train()
    for idx in _batches(len(pairs), batch_size, steps, rng):
        if world.is_distributed:  # the global batch drawn alike on every rank; this rank's contiguous shard
            shard = shard_range(len(idx), world.rank, world.size)
            idx = idx[shard.start : shard.stop]
        batch = [pairs[i] for i in idx]
        if method == "dpo":
            new = sorted({int(i) for i in idx} - ref.keys())
            if new:
                scores = reference_logprobs(
                    lm,
                    [pairs[i].prompt for i in new] * 2,
                    [pairs[i].chosen for i in new] + [pairs[i].rejected for i in new],
                )
                for k, i in enumerate(new):
                    ref[i] = (float(scores[k]), float(scores[len(new) + k]))
            # log π_ref(y_w|x), log π_ref(y_l|x) of the DPO loss, fixed at the model before training
            ref_c = torch.tensor([ref[int(i)][0] for i in idx])
            ref_r = torch.tensor([ref[int(i)][1] for i in idx])
            # DPO (Rafailov et al., Eq. 7): −log σ(β [Δ log π(y_w) − Δ log π(y_l)]), chosen = anti, rejected = stereo
            step = dpo_step(lm, optimizer, [training_prompt(p.prompt) for p in batch], [p.chosen for p in batch],
                            [p.rejected for p in batch], ref_c, ref_r, beta=beta,
                            micro_batch_size=max(1, micro_batch_size // 2))  # fmt: skip
            loss = step.loss
            margins.append(step.margin)
            accs.append(step.accuracy)
        else:
            # SFT: −Σ_t log π_θ(y_t | x, y_<t) on the anti-stereotype; the task vector's SFT on the stereotype
            target = [p.chosen if method == "sft" else p.rejected for p in batch]
            loss = sft_step(lm, optimizer, [training_prompt(p.prompt) for p in batch], target,
                            micro_batch_size=micro_batch_size).loss  # fmt: skip
        losses.append(loss)
        schedule.step()
    lm.model.eval()
    lm.parallel, lm.train_model = None, None  # generation and evaluation run alike on every rank
    return TrainLog(method, steps, losses, margins, accs, len(pairs))


def negate_task_vector(finetuned: PretrainedLM, base: PretrainedLM, *, lam: float = 0.5) -> PretrainedLM:
    """Task-vector negation in place on ``base``: ``θ ← θ_pre − λ (θ_ft − θ_pre)``; returns ``base``.

    Args:
        finetuned: the model fine-tuned on stereotypical outputs (LoRA adapters are merged on a copy).
        base: the pretrained model ``θ_pre`` (no adapters); it becomes the debiased model.
        lam: ``λ`` (0.5 in the official ``test.py``).
    """
    if lam < 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    tau = task_vector(finetuned, base)  # Ilharco et al. (2023): τ = θ_ft − θ_pre
    apply_task_vector(base, tau, scale=-lam)  # negation: θ = θ_pre − λ τ
    return base
