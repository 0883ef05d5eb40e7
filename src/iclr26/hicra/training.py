"""SFT start and GRPO / HICRA training of a tiny LM on the countdown task (the CPU reproduction's engine).

One RL step of every arm (the arms differ only in step 5's mask):

1. draw ``Q`` training problems (same draws for every arm of a seed) and sample ``G`` completions each at
   temperature 1 from the current policy;
2. score them with :func:`~iclr26.hicra.task.check_answer` → rewards ``(Q, G)``;
3. GRPO advantages ``Â = R − mean_group(R)`` (:func:`iclr26.common.grpo.group_relative_advantages`, no std division
   as in the paper's Eq. for Â), one per completion;
4. one forward pass over the sampled sequences: per-token log-probs and entropies of the completion tokens;
5. the mask of amplified tokens: none (``grpo``), the mined Strategic Grams (``hicra``), random n-grams of equal count
   and coverage (``placebo``), or the top-entropy tokens at the planning mask's coverage (``entropy``);
6. ``Â' = hicra_advantages(Â, mask, alpha)`` and one clipped-surrogate step (:func:`iclr26.common.grpo.grpo_loss`;
   on-policy, so the ratio is 1), gradient clipping, AdamW;
7. diagnostics on the mined planning mask: execution/planning token entropy, execution-token NLL, semantic entropy of
   the completions' Strategic Grams; every ``eval_every`` steps, greedy accuracy on the held-out problems.

Data parallel (``torchrun``): :func:`train_rl_sharded`, the same steps with per-prompt sampling seeds, each rank on
its shard of the prompts.

Glossary: ``B`` sequences, ``L`` sequence length (prompt + completion), ``T`` completion tokens, ``V`` vocabulary,
``Q`` prompts per step, ``G`` samples per prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.common.distributed import all_reduce_sum, current_world, shard_range
from iclr26.common.grpo import group_relative_advantages, grpo_loss
from iclr26.common.seeding import derive_seed
from iclr26.common.tinylm import TinyLM, TinyLMConfig
from iclr26.hicra.advantages import entropy_mask, hicra_advantages
from iclr26.hicra.diagnostics import masked_token_mean, semantic_entropy, token_entropy
from iclr26.hicra.grams import StrategicGrams, cluster_counts, planning_mask_batch
from iclr26.hicra.task import Problem, Vocab, check_answer, make_trace

Arm = Literal["grpo", "hicra", "placebo", "entropy"]
ARMS: tuple[Arm, ...] = ("grpo", "hicra", "placebo", "entropy")


@dataclass(frozen=True)
class ModelSpec:
    """The tiny LM's size (see :class:`~iclr26.common.tinylm.TinyLMConfig`)."""

    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    context_len: int


def build_policy(spec: ModelSpec, vocab: Vocab) -> TinyLM:
    """A fresh tiny LM over the task vocabulary (weights from torch's global generator)."""
    return TinyLM(
        TinyLMConfig(
            vocab_size=len(vocab),
            context_len=spec.context_len,
            d_model=spec.d_model,
            n_layers=spec.n_layers,
            n_heads=spec.n_heads,
            d_ff=spec.d_ff,
        )
    )


@dataclass(frozen=True)
class Samples:
    """Completions of a batch of prompts.

    Attributes:
        sequences: ``(B, L)`` long: ``<bos>`` prompt completion, right-padded with ``<pad>``.
        prompt_len: ``(B,)`` tokens before the completion (``<bos>`` included).
        completion_len: ``(B,)`` completion tokens (``<eos>`` included when produced).
        finished: ``(B,)`` bool, whether ``<eos>`` was produced.
        texts: decoded completions (without ``<eos>``).
    """

    sequences: Tensor
    prompt_len: Tensor
    completion_len: Tensor
    finished: Tensor
    texts: list[str]

    def completion_ids(self, i: int) -> list[int]:
        """Completion tokens of row ``i``."""
        p, c = int(self.prompt_len[i]), int(self.completion_len[i])
        return self.sequences[i, p : p + c].tolist()


def encode_prompts(problems: Sequence[Problem], vocab: Vocab) -> list[list[int]]:
    """``<bos>`` + prompt tokens of each problem."""
    return [[Vocab.BOS, *vocab.encode(p.prompt)] for p in problems]


def generate(
    model: TinyLM,
    prompts: Sequence[Sequence[int]],
    vocab: Vocab,
    *,
    max_new_tokens: int,
    temperature: float,
    generator: torch.Generator | None = None,
) -> Samples:
    """Sample (``temperature > 0``) or greedily decode (``0``) a completion per prompt, batched, with a KV cache
    (:meth:`~iclr26.common.tinylm.TinyLM.generate`), as :class:`Samples` on the model's device.

    Raises:
        ValueError: if the model uses learned positions (only RoPE is cached) or the length exceeds its context.
    """
    out = model.generate(
        prompts,
        max_new_tokens=max_new_tokens,
        eos_id=Vocab.EOS,
        pad_id=Vocab.PAD,
        temperature=temperature,
        generator=generator,
    )
    device = out.tokens.device
    plen = torch.tensor([len(p) for p in prompts], device=device)
    width = int((plen + out.lengths).max())
    seq = torch.full((len(prompts), width), Vocab.PAD, dtype=torch.long, device=device)
    rows = out.rows()
    for i, (p, completion) in enumerate(zip(prompts, rows, strict=True)):
        seq[i, : len(p) + len(completion)] = torch.tensor([*p, *completion], device=device)
    return Samples(seq, plen, out.lengths, out.finished, [vocab.decode(c) for c in rows])


def completion_logits(model: TinyLM, samples: Samples) -> tuple[Tensor, Tensor, Tensor]:
    """Logits at the completion tokens, their log-probs and the completion mask.

    Returns:
        ``(logits (B, T, V), logp (B, T), mask (B, T))``: completion token ``t`` of row ``i`` is predicted by the
        model's output at sequence position ``prompt_len_i + t − 1``.
    """
    seq = samples.sequences
    T = int(samples.completion_len.max())
    out = model(seq[:, :-1] if seq.shape[1] > 1 else seq).logits  # (B, L−1, V)
    pos = samples.prompt_len[:, None] + torch.arange(T)[None, :] - 1  # (B, T)
    mask = torch.arange(T)[None, :] < samples.completion_len[:, None]  # (B, T)
    pos = pos.clamp(max=out.shape[1] - 1)
    logits = out[torch.arange(seq.shape[0])[:, None], pos]  # (B, T, V)
    targets = seq[torch.arange(seq.shape[0])[:, None], (pos + 1).clamp(max=seq.shape[1] - 1)]  # (B, T)
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, targets[..., None]).squeeze(-1)
    return logits, logp, mask


# ------------------------------------------------------------------------------------------------ SFT
@dataclass(frozen=True)
class SFTSettings:
    """Supervised start on mixed-quality traces.

    Attributes:
        steps: optimizer steps.
        batch_size: traces per step.
        lr: AdamW learning rate.
        mix: shares of ``(correct, premature, slip)`` traces.
    """

    steps: int
    batch_size: int
    lr: float
    mix: tuple[float, float, float]


def sft_batch(
    problems: Sequence[Problem], vocab: Vocab, rng: np.random.Generator, batch_size: int, mix: Sequence[float]
) -> tuple[Tensor, Tensor]:
    """A batch of traces: inputs ``(B, L)`` and targets ``(B, L)`` (−100 on prompt and padding)."""
    kinds = ("correct", "premature", "slip")
    rows, targets = [], []
    for _ in range(batch_size):
        problem = problems[int(rng.integers(len(problems)))]
        kind = kinds[int(rng.choice(3, p=np.asarray(mix) / sum(mix)))]
        prompt = [Vocab.BOS, *vocab.encode(problem.prompt)]
        completion = [*vocab.encode(make_trace(problem, kind, rng)), Vocab.EOS]  # type: ignore[arg-type]
        ids = prompt + completion
        rows.append(ids[:-1])
        targets.append([-100] * (len(prompt) - 1) + completion)
    L = max(len(r) for r in rows)
    x = torch.full((batch_size, L), Vocab.PAD, dtype=torch.long)
    y = torch.full((batch_size, L), -100, dtype=torch.long)
    for i, (r, t) in enumerate(zip(rows, targets, strict=True)):
        x[i, : len(r)] = torch.tensor(r)
        y[i, : len(t)] = torch.tensor(t)
    return x, y


def train_sft(
    model: TinyLM, problems: Sequence[Problem], vocab: Vocab, settings: SFTSettings, seed: int
) -> list[float]:
    """SFT the policy on mixed-quality traces of ``problems``; returns the loss per step."""
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.0)
    losses = []
    model.train()
    for step in range(settings.steps):
        x, y = sft_batch(problems, vocab, rng, settings.batch_size, settings.mix)
        logits = model(x).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for g in opt.param_groups:  # linear decay to 10 %
            g["lr"] = settings.lr * (1.0 - 0.9 * step / max(1, settings.steps))
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def accuracy(model: TinyLM, problems: Sequence[Problem], vocab: Vocab, *, max_new_tokens: int) -> float:
    """Greedy accuracy on ``problems`` (the held-out measure)."""
    samples = generate(model, encode_prompts(problems, vocab), vocab, max_new_tokens=max_new_tokens, temperature=0.0)
    rewards = [
        check_answer(p, t, finished=bool(f)).reward
        for p, t, f in zip(problems, samples.texts, samples.finished, strict=True)
    ]
    return float(np.mean(rewards))


# ------------------------------------------------------------------------------------------------ RL
@dataclass(frozen=True)
class RLSettings:
    """Settings shared by every arm (equal steps and samples).

    Attributes:
        steps: RL steps.
        prompts_per_step: ``Q``.
        group_size: ``G``.
        lr: AdamW learning rate.
        alpha: HICRA's ``α`` (all amplifying arms).
        clip_eps: ratio clip ``ε``.
        max_new_tokens: completion length cap.
        eval_every: held-out evaluation cadence in steps.
    """

    steps: int
    prompts_per_step: int
    group_size: int
    lr: float
    alpha: float
    clip_eps: float
    max_new_tokens: int
    eval_every: int


@dataclass
class RLCurves:
    """What one RL run measured (plain data, stored as a unit).

    Attributes:
        arm: the arm.
        eval_step, held_out_acc: held-out greedy accuracy at each evaluation (the first at step 0).
        reward: mean training reward per step.
        exec_entropy, plan_entropy: mean policy entropy over execution / planning tokens of the step's samples.
        exec_nll: mean −log-prob of the sampled execution tokens per step.
        semantic_entropy: entropy of the Strategic-Gram cluster counts of the step's samples.
        length: mean completion length per step.
        planning_coverage: share of completion tokens in the mined planning mask per step.
        amplified_coverage: share of completion tokens the arm amplified per step.
        n_tokens: completion tokens sampled in all (equal budgets are checked on it).
    """

    arm: str
    eval_step: list[int] = field(default_factory=list)
    held_out_acc: list[float] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    exec_entropy: list[float] = field(default_factory=list)
    plan_entropy: list[float] = field(default_factory=list)
    exec_nll: list[float] = field(default_factory=list)
    semantic_entropy: list[float] = field(default_factory=list)
    length: list[float] = field(default_factory=list)
    planning_coverage: list[float] = field(default_factory=list)
    amplified_coverage: list[float] = field(default_factory=list)
    n_tokens: int = 0


def train_rl(
    model: TinyLM,
    arm: Arm,
    train: Sequence[Problem],
    held_out: Sequence[Problem],
    vocab: Vocab,
    grams: StrategicGrams,
    placebo: StrategicGrams,
    settings: RLSettings,
    *,
    seed: int,
    progress=None,
) -> RLCurves:
    """Run one arm's RL from the SFT policy in ``model`` (module docstring, steps 1–7)."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    gen = torch.Generator().manual_seed(seed)  # same prompt draws for every arm of a seed
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.0)
    curves = RLCurves(arm=arm)
    Q, G = settings.prompts_per_step, settings.group_size
    for step in range(settings.steps + 1):
        if step % settings.eval_every == 0 or step == settings.steps:
            curves.eval_step.append(step)
            curves.held_out_acc.append(accuracy(model, held_out, vocab, max_new_tokens=settings.max_new_tokens))
        if step == settings.steps:
            break
        # Step 1: Q problems × G samples
        idx = torch.randint(len(train), (Q,), generator=gen).tolist()
        problems = [train[i] for i in idx for _ in range(G)]
        samples = generate(
            model,
            encode_prompts(problems, vocab),
            vocab,
            max_new_tokens=settings.max_new_tokens,
            temperature=1.0,
            generator=gen,
        )
        # Step 2: rewards (Q, G)
        rewards = torch.tensor(
            [
                check_answer(p, t, finished=bool(f)).reward
                for p, t, f in zip(problems, samples.texts, samples.finished, strict=True)
            ]
        ).reshape(Q, G)
        # Step 3: Â = R − mean_group(R), one per completion
        adv = group_relative_advantages(rewards, scale="none").reshape(-1)  # (B,)
        # Step 4: log-probs and entropies of the completion tokens
        logits, logp, mask = completion_logits(model, samples)  # (B, T, V), (B, T), (B, T)
        entropy = token_entropy(logits.detach())  # (B, T)
        pieces = [vocab.piece_list(samples.completion_ids(i)) for i in range(len(problems))]
        planning = planning_mask_batch(pieces, grams, width=mask.shape[1]) & mask  # (B, T)
        # Step 5: the arm's amplified tokens
        coverage = float(planning.sum()) / max(1, int(mask.sum()))
        if arm == "hicra":
            amplified = planning
        elif arm == "placebo":
            amplified = planning_mask_batch(pieces, placebo, width=mask.shape[1]) & mask
        elif arm == "entropy":
            amplified = entropy_mask(entropy, mask, fraction=coverage)
        else:
            amplified = torch.zeros_like(mask)
        # Step 6: Â' = Â + α|Â| on the amplified tokens; one clipped-surrogate step
        token_adv = hicra_advantages(adv, amplified, alpha=settings.alpha if arm != "grpo" else 0.0, mask=mask)
        loss = grpo_loss(logp, logp.detach(), token_adv, mask=mask, clip_eps=settings.clip_eps).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        # Step 7: diagnostics on the mined planning mask
        execution = mask & ~planning
        curves.reward.append(float(rewards.mean()))
        curves.exec_entropy.append(masked_token_mean(entropy, execution))
        curves.plan_entropy.append(masked_token_mean(entropy, planning))
        curves.exec_nll.append(masked_token_mean(-logp.detach(), execution))
        curves.semantic_entropy.append(semantic_entropy(cluster_counts(samples.texts, grams)))
        curves.length.append(float(samples.completion_len.float().mean()))
        curves.planning_coverage.append(coverage)
        curves.amplified_coverage.append(float(amplified.sum()) / max(1, int(mask.sum())))
        curves.n_tokens += int(mask.sum())
        if progress is not None:
            progress.update(1)
    return curves


def auc(steps: Sequence[int], values: Sequence[float]) -> float:
    """Normalised area under a curve: the trapezoid integral divided by the step range (a mean accuracy)."""
    if len(steps) < 2:
        return float(values[0]) if values else math.nan
    s, v = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    return float(np.sum((v[1:] + v[:-1]) / 2 * np.diff(s)) / (s[-1] - s[0]))


# ------------------------------------------------------------------------------------------------ data parallel
#: Held-out problems per greedy-evaluation batch of :func:`sharded_accuracy` (fixed, so a batch's decoding does not
#: depend on the number of ranks).
EVAL_CHUNK = 16


def prompt_seed(step_seed: int, q: int) -> int:
    """The sampling seed of prompt ``q`` (its index in the step's global batch) from the step's seed."""
    return derive_seed(step_seed, "prompt", q) % 2**63


def sharded_accuracy(model: TinyLM, problems: Sequence[Problem], vocab: Vocab, *, max_new_tokens: int) -> float:
    """Greedy accuracy on ``problems``, decoded in fixed batches of :data:`EVAL_CHUNK` dealt round-robin to the
    ranks and summed over them (every rank must call it); in one process the same batches in turn."""
    world = current_world()
    total = 0.0
    for c, start in enumerate(range(0, len(problems), EVAL_CHUNK)):
        if c % world.size != world.rank:
            continue
        chunk = problems[start : start + EVAL_CHUNK]
        samples = generate(model, encode_prompts(chunk, vocab), vocab, max_new_tokens=max_new_tokens, temperature=0.0)
        total += sum(
            check_answer(p, t, finished=bool(f)).reward
            for p, t, f in zip(chunk, samples.texts, samples.finished, strict=True)
        )
    (total,) = all_reduce_sum([total])
    return total / len(problems)


def gather_rows(tensor: Tensor) -> Tensor:
    """This rank's ``(B_r, T_r)`` rows concatenated with the other ranks' in rank order, padded to the widest."""
    world = current_world()
    if not world.is_distributed:
        return tensor
    parts: list[Tensor | None] = [None] * world.size
    torch.distributed.all_gather_object(parts, tensor.cpu())
    width = max(p.shape[1] for p in parts)
    return torch.cat([F.pad(p, (0, width - p.shape[1])) for p in parts], dim=0)


def train_rl_sharded(
    model: TinyLM,
    arm: Arm,
    train: Sequence[Problem],
    held_out: Sequence[Problem],
    vocab: Vocab,
    grams: StrategicGrams,
    placebo: StrategicGrams,
    settings: RLSettings,
    *,
    seed: int,
    progress=None,
) -> RLCurves:
    """:func:`train_rl` with per-prompt sampling seeds, data parallel under torchrun (one process: the same steps).

    Every rank draws the step's ``Q`` problems and a step seed from ``seed`` (the same on every rank), keeps its
    contiguous shard of the prompts (:func:`~iclr26.common.distributed.shard_range`; whole groups) and samples each
    prompt's ``G`` completions in a batch of their own from ``torch.Generator(prompt_seed(step seed, q))``, ``q``
    being the prompt's index in the global batch. So a prompt's completions do not depend on the number of ranks:
    a run on ``N`` ranks draws exactly the completions of a one-process run of this function. Steps 2–6 of the
    module docstring then run on the shard; what needs the whole batch is all-reduced: the planning coverage (the
    entropy arm's token budget), the entropy arm's top-entropy selection (the ``(B_r, T)`` entropies and masks are
    all-gathered, the selection made on the global batch and each rank keeps its rows), and the step-7 diagnostics
    (sums and counts). The loss is the sequence mean over the global batch (each rank's mean weighted by
    ``world size × B_r / B``), whose gradient DDP averages; held-out accuracy is :func:`sharded_accuracy`.

    Equivalence: a 2-rank run equals a 1-rank run of this function (``rollout_seeds="prompt"``) up to float
    summation order (the halves' gradients all-reduced instead of summed in one backward); it is not the
    one-process default (:func:`train_rl`, one sampling stream for the whole batch).

    Raises:
        ValueError: for an unknown arm, or fewer prompts per step than ranks (a rank would have no rows).
    """
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    world = current_world()
    Q, G = settings.prompts_per_step, settings.group_size
    if Q < world.size:
        raise ValueError(f"prompts_per_step={Q} must be >= the number of ranks ({world.size}) under torchrun")
    gen = torch.Generator().manual_seed(seed)  # the same on every rank: one global batch, sharded
    net: nn.Module = model
    if world.is_distributed:
        net = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.0)
    curves = RLCurves(arm=arm)
    shard = shard_range(Q, world.rank, world.size)
    for step in range(settings.steps + 1):
        if step % settings.eval_every == 0 or step == settings.steps:
            curves.eval_step.append(step)
            curves.held_out_acc.append(sharded_accuracy(model, held_out, vocab, max_new_tokens=settings.max_new_tokens))
        if step == settings.steps:
            break
        # Step 1: the global draw of Q problems and the step seed; this rank's prompts x G samples
        idx = torch.randint(len(train), (Q,), generator=gen).tolist()
        step_seed = int(torch.randint(2**62, (1,), generator=gen))
        parts = [
            generate(
                model,
                encode_prompts([train[idx[q]]] * G, vocab),
                vocab,
                max_new_tokens=settings.max_new_tokens,
                temperature=1.0,
                generator=torch.Generator().manual_seed(prompt_seed(step_seed, q)),
            )
            for q in shard
        ]
        problems = [train[idx[q]] for q in shard for _ in range(G)]
        samples = _concat_samples(parts)
        # Step 2-3: rewards (Q_r, G) and group-relative advantages (per group: local)
        rewards = torch.tensor(
            [
                check_answer(p, t, finished=bool(f)).reward
                for p, t, f in zip(problems, samples.texts, samples.finished, strict=True)
            ]
        ).reshape(len(shard), G)
        adv = group_relative_advantages(rewards, scale="none").reshape(-1)  # (B_r,)
        # Step 4: forward through DDP
        logits, logp, mask = completion_logits(net, samples)  # (B_r, T, V), (B_r, T), (B_r, T)
        entropy = token_entropy(logits.detach())  # (B_r, T)
        pieces = [vocab.piece_list(samples.completion_ids(i)) for i in range(len(problems))]
        planning = planning_mask_batch(pieces, grams, width=mask.shape[1]) & mask  # (B_r, T)
        n_plan, n_real = all_reduce_sum([float(planning.sum()), float(mask.sum())])
        coverage = n_plan / max(1.0, n_real)
        # Step 5: the arm's amplified tokens
        if arm == "hicra":
            amplified = planning
        elif arm == "placebo":
            amplified = planning_mask_batch(pieces, placebo, width=mask.shape[1]) & mask
        elif arm == "entropy":  # the top-entropy tokens of the global batch; this rank's rows of that selection
            chosen = entropy_mask(gather_rows(entropy), gather_rows(mask), fraction=coverage)
            before = int(all_gather_counts(len(problems))[: world.rank].sum())
            amplified = chosen[before : before + len(problems), : mask.shape[1]]
        else:
            amplified = torch.zeros_like(mask)
        # Step 6: the global sequence mean's gradient (DDP averages the ranks' weighted means)
        token_adv = hicra_advantages(adv, amplified, alpha=settings.alpha if arm != "grpo" else 0.0, mask=mask)
        loss = grpo_loss(logp, logp.detach(), token_adv, mask=mask, clip_eps=settings.clip_eps).loss
        opt.zero_grad(set_to_none=True)
        (loss * (world.size * len(problems) / (Q * G))).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        # Step 7: diagnostics over the global batch (sums and counts reduced over the ranks)
        execution = mask & ~planning
        counts = cluster_counts(samples.texts, grams)
        sums = all_reduce_sum(
            [
                float(rewards.double().sum()),
                float(entropy.double()[execution].sum()),
                float(execution.sum()),
                float(entropy.double()[planning].sum()),
                float(planning.sum()),
                float((-logp.detach()).double()[execution].sum()),
                float(samples.completion_len.sum()),
                float(amplified.sum()),
                *counts.values(),
            ]
        )
        r_sum, e_sum, e_n, p_sum, p_n, nll_sum, len_sum, amp_n = sums[:8]
        curves.reward.append(r_sum / (Q * G))
        curves.exec_entropy.append(e_sum / e_n if e_n else math.nan)
        curves.plan_entropy.append(p_sum / p_n if p_n else math.nan)
        curves.exec_nll.append(nll_sum / e_n if e_n else math.nan)
        curves.semantic_entropy.append(semantic_entropy([round(v) for v in sums[8:]]))
        curves.length.append(len_sum / (Q * G))
        curves.planning_coverage.append(coverage)
        curves.amplified_coverage.append(amp_n / max(1.0, n_real))
        curves.n_tokens += int(n_real)
        if progress is not None:
            progress.update(1)
    return curves


def all_gather_counts(n: int) -> Tensor:
    """``(world,)`` every rank's ``n`` (one process: ``[n]``)."""
    world = current_world()
    if not world.is_distributed:
        return torch.tensor([n])
    parts: list[int | None] = [None] * world.size
    torch.distributed.all_gather_object(parts, n)
    return torch.tensor(parts)


def _concat_samples(parts: Sequence[Samples]) -> Samples:
    """Rows of several :class:`Samples` in order (sequences right-padded with ``<pad>`` to the widest)."""
    width = max(p.sequences.shape[1] for p in parts)
    return Samples(
        torch.cat([F.pad(p.sequences, (0, width - p.sequences.shape[1]), value=Vocab.PAD) for p in parts]),
        torch.cat([p.prompt_len for p in parts]),
        torch.cat([p.completion_len for p in parts]),
        torch.cat([p.finished for p in parts]),
        [t for p in parts for t in p.texts],
    )
