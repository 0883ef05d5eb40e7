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

Data parallel (``torchrun``): the same step with per-prompt sampling seeds (``per_prompt_seeds=True``): every rank
draws the step's ``Q`` problems and a step seed alike, keeps its contiguous shard of the prompts and samples each
prompt's ``G`` completions from a seed of its own (:func:`prompt_seed`), so a prompt's completions do not depend on
the number of ranks; what needs the whole batch (the planning coverage, the entropy arm's selection, the step-7
diagnostics) is reduced over the ranks, and the loss is weighted so that the averaged gradient is the whole batch's.

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

from iclr26.common.distributed import SINGLE, World, all_gather_object, all_reduce_sum, data_parallel, shard_range
from iclr26.common.grpo import group_relative_advantages, grpo_loss
from iclr26.common.seeding import derive_seed
from iclr26.common.tinylm import TinyLM, TinyLMConfig
from iclr26.hicra.advantages import entropy_mask, hicra_advantages
from iclr26.hicra.diagnostics import semantic_entropy, token_entropy
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


def build_policy(spec: ModelSpec, vocab: Vocab, device: torch.device | str = "cpu") -> TinyLM:
    """A fresh tiny LM over the task vocabulary on ``device`` (weights drawn on the CPU from torch's global
    generator, so they do not depend on the device)."""
    return TinyLM(
        TinyLMConfig(
            vocab_size=len(vocab),
            context_len=spec.context_len,
            d_model=spec.d_model,
            n_layers=spec.n_layers,
            n_heads=spec.n_heads,
            d_ff=spec.d_ff,
        )
    ).to(device)


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
    steps = torch.arange(T, device=seq.device)
    rows = torch.arange(seq.shape[0], device=seq.device)[:, None]
    out = model(seq[:, :-1] if seq.shape[1] > 1 else seq).logits  # (B, L−1, V)
    pos = samples.prompt_len[:, None] + steps[None, :] - 1  # (B, T)
    mask = steps[None, :] < samples.completion_len[:, None]  # (B, T)
    pos = pos.clamp(max=out.shape[1] - 1)
    logits = out[rows, pos]  # (B, T, V)
    targets = seq[rows, (pos + 1).clamp(max=seq.shape[1] - 1)]  # (B, T)
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
    device = model.tok_emb.weight.device
    losses = []
    model.train()
    for step in range(settings.steps):
        x, y = (t.to(device) for t in sft_batch(problems, vocab, rng, settings.batch_size, settings.mix))
        logits = model(x).logits
        # SFT stage: next-token cross-entropy on the completion tokens only (prompt and padding targets are −100)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for g in opt.param_groups:  # linear decay to 10 %
            g["lr"] = settings.lr * (1.0 - 0.9 * step / max(1, settings.steps))
        opt.step()
        losses.append(float(loss.detach()))
    return losses


#: Held-out problems per greedy-evaluation batch under per-prompt seeds (fixed, so that a batch's decoding does not
#: depend on the number of ranks).
EVAL_CHUNK = 16


def accuracy(
    model: TinyLM,
    problems: Sequence[Problem],
    vocab: Vocab,
    *,
    max_new_tokens: int,
    world: World = SINGLE,
    chunk: int | None = None,
) -> float:
    """Greedy accuracy on ``problems`` (the held-out measure).

    Args:
        model: the policy.
        problems: the problems scored.
        vocab: the task vocabulary.
        max_new_tokens: completion cap.
        world: the ranks; batch ``c`` is decoded by rank ``c mod size`` and the rewards are summed over the ranks
            (every rank must call it).
        chunk: problems per decoding batch (None: one batch of all of them).
    """
    size = chunk or len(problems)
    total = 0.0
    for c, start in enumerate(range(0, len(problems), size)):
        if c % world.size != world.rank:
            continue
        part = problems[start : start + size]
        samples = generate(model, encode_prompts(part, vocab), vocab, max_new_tokens=max_new_tokens, temperature=0.0)
        total += sum(
            check_answer(p, t, finished=bool(f)).reward
            for p, t, f in zip(part, samples.texts, samples.finished.tolist(), strict=True)
        )
    if world.is_distributed:
        (total,) = all_reduce_sum([total])
    return total / len(problems)


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

    def add_step(self, step: StepTensors, grams: StrategicGrams, *, n_rows: int, world: World = SINGLE) -> None:
        """Append step 7's diagnostics of one step, as sums and counts reduced over the ranks (``n_rows = Q·G``, the
        global batch)."""
        execution = step.mask & ~step.planning
        counts = cluster_counts(step.texts, grams)
        sums = all_reduce_sum(
            [
                float(step.rewards.double().sum()),
                float(step.entropy.double()[execution].sum()),
                float(execution.sum()),
                float(step.entropy.double()[step.planning].sum()),
                float(step.planning.sum()),
                float(step.nll.double()[execution].sum()),
                float(step.mask.sum()),
                float(step.amplified.sum()),
                *counts.values(),
            ]
        )
        r_sum, e_sum, e_n, p_sum, p_n, nll_sum, n_real, amp_n = sums[:8]
        self.reward.append(r_sum / n_rows)
        self.exec_entropy.append(e_sum / e_n if e_n else math.nan)
        self.plan_entropy.append(p_sum / p_n if p_n else math.nan)
        self.exec_nll.append(nll_sum / e_n if e_n else math.nan)
        self.semantic_entropy.append(semantic_entropy([round(v) for v in sums[8:]]))
        self.length.append(n_real / n_rows)  # the mask holds each completion's tokens, <eos> included
        self.planning_coverage.append(p_n / max(1.0, n_real))
        self.amplified_coverage.append(amp_n / max(1.0, n_real))
        self.n_tokens += int(n_real)


@dataclass(frozen=True)
class StepTensors:
    """One step's per-token tensors on this rank's rows, for the diagnostics (:meth:`RLCurves.add_step`).

    Attributes:
        rewards: ``(Q_r, G)`` rewards.
        entropy: ``(B_r, T)`` policy entropy (or a stand-in such as the surprisal) at the completion tokens.
        nll: ``(B_r, T)`` −log-prob of the sampled tokens.
        mask: ``(B_r, T)`` bool, real completion tokens.
        planning: ``(B_r, T)`` bool, the mined planning mask.
        amplified: ``(B_r, T)`` bool, the tokens the arm amplified.
        texts: the ``B_r`` completions.
    """

    rewards: Tensor
    entropy: Tensor
    nll: Tensor
    mask: Tensor
    planning: Tensor
    amplified: Tensor
    texts: list[str]


def prompt_seed(step_seed: int, q: int) -> int:
    """The sampling seed of prompt ``q`` (its index in the step's global batch) from the step's seed."""
    return derive_seed(step_seed, "prompt", q) % 2**63


def gather_rows(tensor: Tensor, world: World) -> Tensor:
    """This rank's ``(B_r, T_r)`` rows and the other ranks' in rank order, padded to the widest (one process:
    ``tensor`` itself)."""
    if not world.is_distributed:
        return tensor
    parts = all_gather_object(tensor.cpu(), world)
    width = max(p.shape[1] for p in parts)
    return torch.cat([F.pad(p, (0, width - p.shape[1])) for p in parts], dim=0).to(tensor.device)


def rows_before(n: int, world: World) -> int:
    """How many rows the ranks before this one hold, each holding its ``n`` (0 in one process)."""
    return sum(all_gather_object(n, world)[: world.rank])


def amplified_tokens(
    arm: Arm,
    *,
    planning: Tensor,
    placebo: Tensor | None,
    entropy: Tensor,
    mask: Tensor,
    coverage: float,
    world: World = SINGLE,
) -> Tensor:
    """Step 5: the tokens an arm amplifies, ``(B_r, T)`` bool.

    ``hicra``: the mined planning tokens; ``placebo``: the placebo grams' tokens; ``entropy``: the top-entropy tokens
    of the global batch at the planning mask's ``coverage`` (this rank's rows of that selection); ``grpo``: none.
    """
    if arm == "hicra":
        return planning
    if arm == "placebo":
        if placebo is None:
            raise ValueError("the placebo arm needs the placebo grams' mask")
        return placebo
    if arm == "entropy":
        # the paper's high-entropy-token ablation: same transform on the top-entropy tokens, as many as HICRA's
        chosen = entropy_mask(gather_rows(entropy, world), gather_rows(mask, world), fraction=coverage)
        before = rows_before(mask.shape[0], world)
        return chosen[before : before + mask.shape[0], : mask.shape[1]]
    return torch.zeros_like(mask)


def sample_step(
    model: TinyLM,
    train: Sequence[Problem],
    vocab: Vocab,
    settings: RLSettings,
    gen: torch.Generator,
    *,
    per_prompt_seeds: bool,
    world: World = SINGLE,
) -> tuple[list[Problem], Samples]:
    """Step 1: draw the step's ``Q`` problems from ``gen`` and sample ``G`` completions each at temperature 1.

    One stream (``per_prompt_seeds=False``, one process only): the whole batch from ``gen``. Per-prompt seeds: a step
    seed from ``gen``, then each prompt ``q`` of this rank's shard in a batch of its own from
    ``torch.Generator(prompt_seed(step seed, q))``.

    Returns:
        ``(problems, samples)``: one problem per row of this rank's rows.
    """
    Q, G = settings.prompts_per_step, settings.group_size
    idx = torch.randint(len(train), (Q,), generator=gen).tolist()
    if not per_prompt_seeds:
        problems = [train[i] for i in idx for _ in range(G)]
        prompts = encode_prompts(problems, vocab)
        return problems, generate(
            model, prompts, vocab, max_new_tokens=settings.max_new_tokens, temperature=1.0, generator=gen
        )
    step_seed = int(torch.randint(2**62, (1,), generator=gen))
    shard = shard_range(Q, world.rank, world.size)
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
    return [train[idx[q]] for q in shard for _ in range(G)], concat_samples(parts)


def rl_step(
    net: nn.Module,
    opt: torch.optim.Optimizer,
    arm: Arm,
    problems: Sequence[Problem],
    samples: Samples,
    vocab: Vocab,
    grams: StrategicGrams,
    placebo: StrategicGrams,
    settings: RLSettings,
    *,
    world: World = SINGLE,
) -> StepTensors:
    """Steps 2–6 of one arm on this rank's rows (module docstring); ``net`` is the policy or its data-parallel
    wrapper. Returns the tensors of step 7's diagnostics."""
    Q, G = settings.prompts_per_step, settings.group_size
    # Step 2: rewards (Q_r, G)
    rewards = torch.tensor(
        [
            check_answer(p, t, finished=bool(f)).reward
            for p, t, f in zip(problems, samples.texts, samples.finished.tolist(), strict=True)
        ]
    ).reshape(-1, G)
    # Step 3: Â = R − mean_group(R), one per completion (the paper's Â, no std division)
    adv = group_relative_advantages(rewards, scale="none").reshape(-1).to(samples.sequences.device)  # (B_r,)
    # Step 4: log-probs and entropies of the completion tokens
    logits, logp, mask = completion_logits(net, samples)  # (B_r, T, V), (B_r, T), (B_r, T)
    entropy = token_entropy(logits.detach())  # (B_r, T)
    pieces = [vocab.piece_list(samples.completion_ids(i)) for i in range(len(problems))]
    planning = planning_mask_batch(pieces, grams, width=mask.shape[1]).to(mask.device) & mask  # (B_r, T)
    n_plan, n_real = all_reduce_sum([float(planning.sum()), float(mask.sum())])
    # Step 5: the arm's amplified tokens
    placebo_mask = None
    if arm == "placebo":
        placebo_mask = planning_mask_batch(pieces, placebo, width=mask.shape[1]).to(mask.device) & mask
    amplified = amplified_tokens(
        arm,
        planning=planning,
        placebo=placebo_mask,
        entropy=entropy,
        mask=mask,
        coverage=n_plan / max(1.0, n_real),
        world=world,
    )
    # Step 6 (§3, the HICRA advantage): Â' = Â + α|Â| on the amplified tokens; one clipped-surrogate step whose
    # gradient, averaged over the ranks, is the global batch's sequence mean (each rank's mean weighted by its share)
    # the GRPO baseline is the same step with α = 0, so the arms differ only in which tokens get Â + α|Â|
    token_adv = hicra_advantages(adv, amplified, alpha=settings.alpha if arm != "grpo" else 0.0, mask=mask)
    # the PPO/GRPO clipped surrogate on the token advantages; old log-probs = current (one on-policy step, ratio 1)
    loss = grpo_loss(logp, logp.detach(), token_adv, mask=mask, clip_eps=settings.clip_eps).loss
    opt.zero_grad(set_to_none=True)
    (loss * (world.size * len(problems) / (Q * G))).backward()
    nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()
    return StepTensors(rewards, entropy, -logp.detach(), mask, planning, amplified, samples.texts)


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
    per_prompt_seeds: bool = False,
    world: World = SINGLE,
    device: torch.device | None = None,
    progress=None,
) -> RLCurves:
    """Run one arm's RL from the SFT policy in ``model`` (module docstring, steps 1–7).

    Args:
        model: the SFT policy (updated in place), on ``device``.
        arm: one of :data:`ARMS`.
        train, held_out: the RL problems and the held-out ones.
        vocab: the task vocabulary.
        grams, placebo: the mined Strategic Grams and the placebo set.
        settings: steps, batch and optimiser settings shared by every arm.
        seed: the prompt draws and sampling stream (the same for every arm of a seed: paired arms).
        per_prompt_seeds: sample each prompt's group from a seed of its own (:func:`sample_step`), and evaluate in
            fixed batches of :data:`EVAL_CHUNK`; required under torchrun.
        world: the ranks (``ctx.world``); each takes its contiguous shard of the prompts.
        device: the model's device, for the data-parallel wrapper.
        progress: a progress bar (``update(1)`` per step).

    Raises:
        ValueError: for an unknown arm, one sampling stream on several ranks, or fewer prompts per step than ranks.
    """
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    if world.is_distributed and not per_prompt_seeds:
        raise ValueError("under torchrun train_rl needs per_prompt_seeds=True (one stream cannot be sharded)")
    if settings.prompts_per_step < world.size:
        raise ValueError(f"prompts_per_step={settings.prompts_per_step} must be >= the number of ranks ({world.size})")
    gen = torch.Generator().manual_seed(seed)  # the same on every rank: one global batch, sharded
    net = data_parallel(model, world, device=device)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.0)
    curves = RLCurves(arm=arm)
    chunk = EVAL_CHUNK if per_prompt_seeds else None
    for step in range(settings.steps + 1):
        if step % settings.eval_every == 0 or step == settings.steps:
            curves.eval_step.append(step)
            acc = accuracy(model, held_out, vocab, max_new_tokens=settings.max_new_tokens, world=world, chunk=chunk)
            curves.held_out_acc.append(acc)
        if step == settings.steps:
            break
        problems, samples = sample_step(
            model, train, vocab, settings, gen, per_prompt_seeds=per_prompt_seeds, world=world
        )
        tensors = rl_step(net, opt, arm, problems, samples, vocab, grams, placebo, settings, world=world)
        curves.add_step(tensors, grams, n_rows=settings.prompts_per_step * settings.group_size, world=world)
        if progress is not None:
            progress.update(1)
    return curves


def auc(steps: Sequence[int], values: Sequence[float]) -> float:
    """Normalised area under a curve: the trapezoid integral divided by the step range (a mean accuracy)."""
    if len(steps) < 2:
        return float(values[0]) if values else math.nan
    s, v = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    return float(np.sum((v[1:] + v[:-1]) / 2 * np.diff(s)) / (s[-1] - s[0]))


def concat_samples(parts: Sequence[Samples]) -> Samples:
    """Rows of several :class:`Samples` in order (sequences right-padded with ``<pad>`` to the widest)."""
    width = max(p.sequences.shape[1] for p in parts)
    return Samples(
        torch.cat([F.pad(p.sequences, (0, width - p.sequences.shape[1]), value=Vocab.PAD) for p in parts]),
        torch.cat([p.prompt_len for p in parts]),
        torch.cat([p.completion_len for p in parts]),
        torch.cat([p.finished for p in parts]),
        [t for p in parts for t in p.texts],
    )
