"""The two policies EoG's pipeline trains, behind one interface: a tiny word-level LM and a pretrained LM with LoRA.

:class:`TinyPolicy` is a :class:`~iclr26.common.tinylm.TinyLM` trained from scratch over a closed word vocabulary
(the CPU reproduction); :class:`PretrainedPolicy` is SmolLM2-135M-Instruct (or any causal LM folder) with LoRA
adapters through :mod:`iclr26.common.pretrained` (the ``gpu`` preset). Both expose the same four operations, so the
pipeline of :mod:`iclr26.eog.training` is one code path:

- ``sft_update(examples, targets)``: one supervised step on prompt → trace pairs;
- ``sample(examples, group_size, seed)``: ``G`` completions per prompt at the configured temperature;
- ``grpo_update(samples, rewards)``: one GRPO step, DeepSeekMath Eq. (3) through :mod:`iclr26.common.grpo`:
  group-normalised advantages ``Â_i = (r_i − mean)/std`` (EoG's ``adv_estimator=grpo``), the clipped surrogate
  with token-mean aggregation and no KL term (the official ``train/run_eog.sh``);
- ``greedy(examples)``: greedy completions (evaluation).

Data parallel (``torchrun``, :mod:`iclr26.common.distributed`): ``distribute(world, mode)`` makes the GRPO updates
of a policy data parallel (DDP for the tiny LM; DDP or FSDP2 through :func:`iclr26.common.pretrained.distribute` for
the pretrained LM), and ``sample_prompts(examples, group_size, seeds)`` draws each prompt's ``G`` completions from
a seed of its own, so that a rank sampling its shard of the prompts draws what one process would. Each rank then
passes its shard's samples to ``grpo_update``, which normalises by the global token count (all-reduced) so that the
averaged gradient is the one-process gradient of the whole batch's token mean (in one process: the batch's token
mean itself).

Glossary: ``B`` sequences, ``L`` sequence length, ``T`` completion tokens, ``V`` vocabulary, ``Q`` prompts,
``G`` samples per prompt, ``D`` width, ``H`` heads.

Deviations: one gradient step per rollout (on-policy, ratio 1, so the asymmetric clip 0.2/0.28 of ``run_eog.sh`` and
its two PPO epochs are not used); the tiny LM reads the compact prompt (:func:`~iclr26.eog.data.compact_prompt`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, data_parallel
from iclr26.common.grpo import group_relative_advantages, grpo_loss
from iclr26.common.tinylm import TinyLM, TinyLMConfig
from iclr26.eog.data import KGQAExample, compact_prompt, official_prompt

__all__ = [
    "Policy",
    "PretrainedPolicy",
    "Samples",
    "TinyPolicy",
    "WordVocab",
    "completion_logprobs",
    "pack_rows",
    "tokenize",
]

_TOKEN = re.compile(r"</?think>|</?answer>|[A-Za-z0-9_.\-]+|\S")


def tokenize(text: str) -> list[str]:
    """Word-level pieces: the four tags, words (letters, digits, ``_ . -``), and single other characters."""
    return _TOKEN.findall(text)


class WordVocab:
    """A closed word vocabulary; decoding joins pieces with spaces (what the reward functions then read).

    Args:
        texts: texts whose pieces make up the vocabulary (prompts and traces).
    """

    PAD, BOS, EOS = 0, 1, 2
    SPECIALS = ("<pad>", "<bos>", "<eos>")

    def __init__(self, texts: Sequence[str]) -> None:
        pieces = sorted({p for t in texts for p in tokenize(t)})
        self.itos = list(self.SPECIALS) + pieces
        self.stoi = {p: i for i, p in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        """Ids of a text's pieces.

        Raises:
            ValueError: naming the first piece outside the vocabulary.
        """
        ids = []
        for p in tokenize(text):
            if p not in self.stoi:
                raise ValueError(f"piece {p!r} is not in the vocabulary (built from the task's prompts and traces)")
            ids.append(self.stoi[p])
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        """Pieces joined by spaces; special ids are dropped."""
        return " ".join(self.itos[i] for i in ids if i >= len(self.SPECIALS))


@dataclass
class Samples:
    """Sampled completions, row ``q·G + g`` for sample ``g`` of prompt ``q``.

    Attributes:
        texts: the completion texts (what the rewards read).
        n_tokens: ``(N,)`` completion lengths in tokens.
        finished: ``(N,)`` whether each stopped on its own (``<eos>`` / stop string) rather than at the length cap.
        group_size: ``G``.
        handle: the backend's own record of the rollout (ids and log-probs).
    """

    texts: list[str]
    n_tokens: list[int]
    finished: list[bool]
    group_size: int
    handle: Any = None


class Policy(Protocol):
    """What the pipeline needs from a policy (see the module docstring)."""

    def sft_update(self, examples: Sequence[KGQAExample], targets: Sequence[str]) -> float: ...

    def sample(self, examples: Sequence[KGQAExample], *, group_size: int, seed: int) -> Samples: ...

    def grpo_update(self, samples: Samples, rewards: Tensor) -> float: ...

    def greedy(self, examples: Sequence[KGQAExample]) -> Samples: ...

    def sample_prompts(self, examples: Sequence[KGQAExample], *, group_size: int, seeds: Sequence[int]) -> Samples: ...

    def distribute(self, world: World, mode: str = "ddp") -> Policy: ...

    def state(self) -> dict[str, Tensor]: ...

    def load_state(self, state: dict[str, Tensor]) -> None: ...


# ------------------------------------------------------------------------------------------------ tiny LM
class TinyPolicy:
    """A tiny LM from scratch over a :class:`WordVocab` (module docstring).

    Args:
        vocab: the vocabulary.
        d_model, n_layers, n_heads, d_ff: the :class:`~iclr26.common.tinylm.TinyLM` size.
        context_len: longest prompt + completion.
        max_new_tokens: completion cap.
        lr_sft, lr_rl: AdamW learning rates of the two kinds of update (one optimizer per kind, created lazily).
        temperature: sampling temperature of RL rollouts.
        clip_eps: ratio clip.
        seed: initialisation seed.
        device: where the model and its batches live (the weights are drawn on the CPU, then moved).
    """

    def __init__(
        self,
        vocab: WordVocab,
        *,
        d_model: int = 96,
        n_layers: int = 3,
        n_heads: int = 4,
        d_ff: int = 192,
        context_len: int = 128,
        max_new_tokens: int = 48,
        lr_sft: float = 2e-3,
        lr_rl: float = 3e-4,
        temperature: float = 1.0,
        clip_eps: float = 0.2,
        seed: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        self.vocab = vocab
        self.device = torch.device(device)
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.clip_eps = clip_eps
        self.lr_sft, self.lr_rl = lr_sft, lr_rl
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.model = TinyLM(
                TinyLMConfig(
                    vocab_size=len(vocab),
                    context_len=context_len,
                    d_model=d_model,
                    n_layers=n_layers,
                    n_heads=n_heads,
                    d_ff=d_ff,
                )
            ).to(self.device)
        self._opt: dict[str, torch.optim.Optimizer] = {}
        self.net: nn.Module = self.model  # the DDP wrapper after distribute() under torchrun
        self.world: World = SINGLE

    def distribute(self, world: World, mode: str = "ddp") -> TinyPolicy:
        """Make :meth:`grpo_update` data parallel over ``world``'s ranks (DDP; no-op in one process).

        Raises:
            ValueError: for a mode other than ``"ddp"`` (FSDP is for the pretrained LM).
        """
        if mode != "ddp":
            raise ValueError(f"the tiny LM runs data parallel with mode='ddp', got {mode!r} (fsdp: the pretrained LM)")
        if self.net is self.model:
            self.net = data_parallel(self.model, world, device=self.device)
            self.world = world
        return self

    def _optimizer(self, kind: str) -> torch.optim.Optimizer:
        if kind not in self._opt:
            lr = self.lr_sft if kind == "sft" else self.lr_rl
            self._opt[kind] = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=0.0)
        return self._opt[kind]

    def prompt_ids(self, example: KGQAExample) -> list[int]:
        """``<bos>`` + the compact prompt's ids."""
        return [WordVocab.BOS, *self.vocab.encode(compact_prompt(example))]

    def _step(self, kind: str, loss: Tensor) -> float:
        opt = self._optimizer(kind)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # run_eog.sh: grad_clip=1.0
        opt.step()
        return float(loss.detach())

    def sft_update(self, examples: Sequence[KGQAExample], targets: Sequence[str]) -> float:
        """One step of ``−Σ log π(c_t | p, c_<t) / #completion tokens`` (``<eos>`` included)."""
        rows = [
            (self.prompt_ids(e), [*self.vocab.encode(t), WordVocab.EOS]) for e, t in zip(examples, targets, strict=True)
        ]
        seq, plen, clen = pack_rows(rows, self.device)
        self.model.train()
        logp, mask = completion_logprobs(self.model, seq, plen, clen)  # (B, T) each
        # Stage 1, SFT cold start: token-mean NLL of the reasoning trace and answer
        return self._step("sft", -(logp * mask).sum() / mask.sum())

    def sample(self, examples: Sequence[KGQAExample], *, group_size: int, seed: int) -> Samples:
        """``G`` completions per prompt at the policy's temperature, from ``torch.Generator(seed)``."""
        gen = torch.Generator().manual_seed(seed)
        prompts = [self.prompt_ids(e) for e in examples for _ in range(group_size)]
        return self._generate(prompts, group_size, self.temperature, gen)

    def sample_prompts(self, examples: Sequence[KGQAExample], *, group_size: int, seeds: Sequence[int]) -> Samples:
        """``G`` completions per prompt, each prompt's drawn in a batch of their own from ``torch.Generator(seed)``."""
        parts = [
            self._generate(
                [self.prompt_ids(e)] * group_size, group_size, self.temperature, torch.Generator().manual_seed(s)
            )
            for e, s in zip(examples, seeds, strict=True)
        ]
        return _concat(parts, group_size)

    def greedy(self, examples: Sequence[KGQAExample]) -> Samples:
        """Greedy completions, one per example."""
        return self._generate([self.prompt_ids(e) for e in examples], 1, 0.0, None)

    def _generate(self, prompts: list[list[int]], group_size: int, temperature: float, gen) -> Samples:
        gen_out = self.model.generate(
            prompts,
            max_new_tokens=self.max_new_tokens,
            eos_id=WordVocab.EOS,
            pad_id=WordVocab.PAD,
            temperature=temperature,
            generator=gen,
        )
        out = gen_out.rows()
        texts = [self.vocab.decode(c) for c in out]
        return Samples(texts, [len(c) for c in out], gen_out.finished.tolist(), group_size, handle=(prompts, out))

    def grpo_update(self, samples: Samples, rewards: Tensor) -> float:
        """One GRPO step on ``samples`` with ``rewards`` ``(Q_r, G)`` (module docstring), this rank's share of the
        batch: the loss is the token mean over every rank's tokens (the count all-reduced), and DDP averages
        ``world size ×`` each rank's part, which gives the whole batch's gradient. Returns the global loss."""
        prompts, completions = samples.handle
        # GRPO advantage A_i = (r_i − mean(r)) / std(r) over each question's group of G rollouts
        adv = group_relative_advantages(rewards.reshape(-1, samples.group_size).double()).float().reshape(-1)  # (N,)
        (signal,) = all_reduce_sum([float(adv.abs().gt(0).any())])
        if signal == 0:
            return 0.0  # every group of every rank tied: no gradient (verl's GRPO gives these advantage 0 too)
        seq, plen, clen = pack_rows(list(zip(prompts, completions, strict=True)), self.device)
        self.model.train()
        logp, mask = completion_logprobs(self.net, seq, plen, clen)  # (N_r, T)
        (tokens,) = all_reduce_sum([float(mask.sum())])
        # DeepSeekMath Eq. (3), on-policy (π_old = π_θ detached), token-mean aggregation (run_eog.sh)
        loss = grpo_loss(
            logp, logp.detach(), adv.to(self.device), mask=mask, clip_eps=self.clip_eps, aggregation="token"
        ).loss
        share = loss * (float(mask.sum()) / tokens)  # this rank's part of the global token mean
        self._step("rl", share * self.world.size)
        (total,) = all_reduce_sum([float(share.detach())])
        return total

    def state(self) -> dict[str, Tensor]:
        """The model's weights as CPU tensors."""
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def load_state(self, state: dict[str, Tensor]) -> None:
        """Load weights from :meth:`state`; optimizer moments start afresh."""
        self.model.load_state_dict(state)
        self._opt.clear()


def _concat(parts: Sequence[Samples], group_size: int) -> Samples:
    """The rows of several tiny-LM :class:`Samples` in order (handles ``(prompts, completions)`` joined)."""
    return Samples(
        [t for p in parts for t in p.texts],
        [n for p in parts for n in p.n_tokens],
        [f for p in parts for f in p.finished],
        group_size,
        handle=([r for p in parts for r in p.handle[0]], [c for p in parts for c in p.handle[1]]),
    )


def pack_rows(
    rows: Sequence[tuple[Sequence[int], Sequence[int]]], device: torch.device | str = "cpu"
) -> tuple[Tensor, Tensor, Tensor]:
    """Right-padded ``(B, L)`` prompt+completion ids, prompt lengths ``(B,)``, completion lengths ``(B,)``, on
    ``device``."""
    length = max(len(p) + len(c) for p, c in rows)
    seq = torch.full((len(rows), length), WordVocab.PAD, dtype=torch.long)
    for i, (p, c) in enumerate(rows):
        seq[i, : len(p) + len(c)] = torch.tensor([*p, *c])
    lengths = torch.tensor([[len(p) for p, _ in rows], [len(c) for _, c in rows]])
    return seq.to(device), lengths[0].to(device), lengths[1].to(device)


def completion_logprobs(model: TinyLM, seq: Tensor, plen: Tensor, clen: Tensor) -> tuple[Tensor, Tensor]:
    """``log π(c_t | p, c_<t)`` ``(B, T)`` and the completion mask ``(B, T)``; token ``t`` is predicted at position
    ``plen + t − 1``."""
    T = max(1, int(clen.max()))
    steps = torch.arange(T, device=seq.device)
    logits = model(seq[:, :-1]).logits  # (B, L−1, V)
    pos = (plen[:, None] + steps[None, :] - 1).clamp(max=logits.shape[1] - 1)  # (B, T)
    rows = torch.arange(seq.shape[0], device=seq.device)[:, None]
    targets = seq[rows, (pos + 1).clamp(max=seq.shape[1] - 1)]  # (B, T)
    logp = torch.log_softmax(logits[rows, pos].float(), dim=-1).gather(-1, targets[..., None]).squeeze(-1)
    mask = steps[None, :] < clen[:, None]  # (B, T)
    return logp.masked_fill(~mask, 0.0), mask


# ------------------------------------------------------------------------------------------------ pretrained LM
class PretrainedPolicy:
    """A pretrained chat LM with LoRA (:mod:`iclr26.common.pretrained`), prompted in the official layout.

    Args:
        lm: a :class:`~iclr26.common.pretrained.PretrainedLM` with LoRA adapters.
        max_new_tokens: completion cap.
        lr_sft, lr_rl: AdamW learning rates.
        temperature: sampling temperature (``run_eog.sh``: 1.0).
        clip_eps: ratio clip.
        micro_batch_size: sequences per forward pass.
    """

    STOP = ("</answer>",)

    def __init__(
        self,
        lm: Any,
        *,
        max_new_tokens: int = 96,
        lr_sft: float = 2e-4,
        lr_rl: float = 2e-5,
        temperature: float = 1.0,
        clip_eps: float = 0.2,
        micro_batch_size: int = 8,
    ) -> None:
        if not lm.has_lora:
            raise ValueError("lm needs LoRA adapters (iclr26.common.pretrained.add_lora) to be trained here")
        self.lm = lm
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.clip_eps = clip_eps
        self.micro_batch_size = micro_batch_size
        self.lr_sft, self.lr_rl = lr_sft, lr_rl
        self._opt: dict[str, torch.optim.Optimizer] = {}

    def _optimizer(self, kind: str) -> torch.optim.Optimizer:
        if kind not in self._opt:
            params = [p for p in self.lm.model.parameters() if p.requires_grad]
            self._opt[kind] = torch.optim.AdamW(params, lr=self.lr_sft if kind == "sft" else self.lr_rl)
        return self._opt[kind]

    def sft_update(self, examples: Sequence[KGQAExample], targets: Sequence[str]) -> float:
        """One :func:`~iclr26.common.pretrained.sft_step` on chat prompts → traces."""
        from iclr26.common.pretrained import sft_step

        self.lm.model.train()
        prompts = [official_prompt(e) for e in examples]
        out = sft_step(self.lm, self._optimizer("sft"), prompts, list(targets), micro_batch_size=self.micro_batch_size)
        self.lm.model.eval()
        return out.loss

    def sample(self, examples: Sequence[KGQAExample], *, group_size: int, seed: int) -> Samples:
        """:func:`~iclr26.common.pretrained.sample_rollout`, stopping after ``</answer>``."""
        from iclr26.common.pretrained import sample_rollout

        rollout = sample_rollout(
            self.lm,
            [official_prompt(e) for e in examples],
            group_size=group_size,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            seed=seed % 2**31,
            stop=self.STOP,
            micro_batch_size=self.micro_batch_size,
        )
        return self._samples(rollout.texts, rollout.completion_ids, rollout.finish_reasons, group_size, rollout)

    def distribute(self, world: World, mode: str = "ddp") -> PretrainedPolicy:
        """Make the updates data parallel (:func:`iclr26.common.pretrained.distribute`: ``"ddp"`` or ``"fsdp"``);
        a no-op in a one-process ``world``. Call it after :meth:`load_state`."""
        from iclr26.common.pretrained import distribute

        if world.is_distributed:
            distribute(self.lm, mode=mode, world=world)  # type: ignore[arg-type]
        self._opt.clear()  # optimizers over the (possibly sharded) parameters
        return self

    def sample_prompts(self, examples: Sequence[KGQAExample], *, group_size: int, seeds: Sequence[int]) -> Samples:
        """:meth:`sample` with one seed per prompt (``sample_rollout(prompt_seeds=...)``)."""
        from iclr26.common.pretrained import sample_rollout

        rollout = sample_rollout(
            self.lm,
            [official_prompt(e) for e in examples],
            group_size=group_size,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            stop=self.STOP,
            micro_batch_size=self.micro_batch_size,
            prompt_seeds=[s % 2**31 for s in seeds],
        )
        return self._samples(rollout.texts, rollout.completion_ids, rollout.finish_reasons, group_size, rollout)

    def greedy(self, examples: Sequence[KGQAExample]) -> Samples:
        """Greedy completions in the official layout."""
        gen = self.lm.generate(
            [official_prompt(e) for e in examples], max_new_tokens=self.max_new_tokens, temperature=0.0, stop=self.STOP
        )
        return self._samples(gen.texts, gen.completion_ids, gen.finish_reasons, 1, None)

    @staticmethod
    def _samples(texts, ids, reasons, group_size, handle) -> Samples:
        # a stop string is cut from the text; put the closing tag back where generation stopped on it
        texts = [t + "</answer>" if r == "stop" else t for t, r in zip(texts, reasons, strict=True)]
        return Samples(list(texts), [len(c) for c in ids], [r != "length" for r in reasons], group_size, handle)

    def grpo_update(self, samples: Samples, rewards: Tensor) -> float:
        """One :func:`~iclr26.common.pretrained.grpo_step` (group-normalised advantages, token-mean, no KL)."""
        from iclr26.common.pretrained import grpo_step

        if samples.handle is None:
            raise ValueError("samples come from greedy(); GRPO needs a rollout from sample()")
        self.lm.model.train()
        out = grpo_step(
            self.lm,
            self._optimizer("rl"),
            samples.handle,
            rewards=rewards.reshape(-1, samples.group_size).float(),
            clip_eps=self.clip_eps,
            aggregation="token",
            micro_batch_size=self.micro_batch_size,
        )
        self.lm.model.eval()
        return out.loss

    def state(self) -> dict[str, Tensor]:
        """The LoRA adapters as CPU tensors (gathered from their shards under FSDP)."""
        if self.lm.parallel == "fsdp":
            return {
                n.replace("_fsdp_wrapped_module.", ""): p.full_tensor().detach().cpu().clone()
                for n, p in self.lm.model.named_parameters()
                if p.requires_grad
            }
        return {n: p.detach().cpu().clone() for n, p in self.lm.model.named_parameters() if p.requires_grad}

    def load_state(self, state: dict[str, Tensor]) -> None:
        """Copy adapters from :meth:`state`; optimizer moments start afresh."""
        params = dict(self.lm.model.named_parameters())
        with torch.no_grad():
            for n, v in state.items():
                params[n].copy_(v.to(params[n].device))
        self._opt.clear()
