"""A randomly initialised Llama with a byte-level tokenizer and a chat template, of any shape.

For tests, smoke runs and device checks: every code path of the package (chat prompts, generation, scoring, LoRA,
SFT/DPO/GRPO steps, task vectors, saving and loading a folder) runs on it without the pretrained weights. Its
tokenizer has SmolLM2's special tokens (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>`` at ids 0–2), one token
per byte after them, and the ChatML template, so prompts are formatted as SmolLM2's are; its outputs are random, so
nothing it scores means anything.

:data:`TINY_LLAMA` (width 16, 2 layers) builds in well under a second; :data:`SMOLLM2_135M` is SmolLM2-135M's exact
shape (134,515,008 parameters, vocabulary 49,152: the embedding rows beyond the 259 tokens of the byte tokenizer
exist but are never produced by it), for timing and placement checks when the GGUF weights are not installed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from iclr26.common.pretrained.model import PretrainedLM
from iclr26.common.pretrained.weights import DTYPES, ModelSource, require_transformers

__all__ = [
    "CHATML_TEMPLATE",
    "SMOLLM2_135M",
    "SPECIAL_TOKENS",
    "TINY_LLAMA",
    "LlamaShape",
    "byte_tokens",
    "random_llama",
    "shape_of",
]

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")  # ids 0, 1, 2 as in SmolLM2
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + "
    "'\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class LlamaShape:
    """The shape of a ``LlamaForCausalLM`` (tied input and output embeddings).

    Attributes:
        hidden: width ``D``.
        intermediate: MLP width.
        layers: decoder layers.
        heads: attention heads (``D / heads`` per head).
        kv_heads: key/value heads (grouped-query attention).
        vocab: embedding rows; at least the byte tokenizer's 259.
        max_positions: ``max_position_embeddings``.
        rope_theta: the rotary embedding's base.
        rms_norm_eps: the RMSNorm epsilon.
    """

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int = len(SPECIAL_TOKENS) + 256
    max_positions: int = 2048
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6


#: two layers of width 16: builds in well under a second
TINY_LLAMA = LlamaShape(hidden=16, intermediate=32, layers=2, heads=2, kv_heads=1)
#: SmolLM2-135M(-Instruct)'s configuration (its ``config.json``)
SMOLLM2_135M = LlamaShape(
    hidden=576,
    intermediate=1536,
    layers=30,
    heads=9,
    kv_heads=3,
    vocab=49152,
    max_positions=8192,
    rope_theta=100000.0,
    rms_norm_eps=1e-5,
)


def byte_tokens() -> list[str]:
    """The 256 byte tokens of a byte-level BPE vocabulary (GPT-2's byte-to-unicode table), in byte order."""
    require_transformers()
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    table = bytes_to_unicode()
    return [table[b] for b in range(256)]


def _byte_tokenizer() -> Any:
    """A fast byte-level tokenizer with the special tokens and the ChatML template (pad = eos = ``<|im_end|>``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *byte_tokens()])}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        additional_special_tokens=["<|endoftext|>"],
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def random_llama(
    shape: LlamaShape = TINY_LLAMA,
    *,
    seed: int = 0,
    dtype: Literal["bfloat16", "float32"] = "float32",
    device: str | torch.device = "cpu",
    name: str = "random-llama",
    save_to: str | Path | None = None,
) -> PretrainedLM:
    """A randomly initialised ``LlamaForCausalLM`` of ``shape`` with the byte-level chat tokenizer, in eval mode.

    The weights are ``transformers``' initialisation drawn in float32 on the CPU from torch's generator seeded with
    ``seed`` inside ``fork_rng`` (the caller's generator is untouched), then cast to ``dtype`` and moved to
    ``device``: the same ``seed`` gives the same model on every device.

    Args:
        shape: :data:`TINY_LLAMA`, :data:`SMOLLM2_135M` or any :class:`LlamaShape`.
        seed: seed of the initialisation.
        dtype: ``"float32"`` or ``"bfloat16"``.
        device: where the model goes.
        name: the model's name in :meth:`PretrainedLM.describe`.
        save_to: if given, also write the model (in ``dtype``) and the tokenizer there as a Hugging Face folder,
            which :func:`~iclr26.common.pretrained.load_pretrained` reads back.

    Returns:
        The :class:`PretrainedLM`.

    Raises:
        ValueError: for an unknown ``dtype`` or a vocabulary smaller than the tokenizer's 259 tokens.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    n_tokens = len(SPECIAL_TOKENS) + 256
    if shape.vocab < n_tokens:
        raise ValueError(f"shape.vocab must be >= {n_tokens} (the byte tokenizer's size), got {shape.vocab}")
    require_transformers()
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = _byte_tokenizer()
    config = LlamaConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        max_position_embeddings=shape.max_positions,
        rms_norm_eps=shape.rms_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": shape.rope_theta},
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model = model.to(device=torch.device(device), dtype=getattr(torch, dtype)).eval()
    source = ModelSource(name, "<in memory>", "hf", None, "folder", None, 0.0)
    lm = PretrainedLM(model, tokenizer, source=source, dtype=dtype)
    if save_to is not None:
        lm.save(save_to)
    return lm


def shape_of(lm: PretrainedLM) -> dict[str, Any]:
    """The :class:`LlamaShape` fields of ``lm``'s model configuration (to compare a loaded model with a shape)."""
    config = (lm.model.get_base_model() if lm.has_lora else lm.model).config
    rope = getattr(config, "rope_parameters", None) or {}
    values = {
        "hidden": config.hidden_size,
        "intermediate": config.intermediate_size,
        "layers": config.num_hidden_layers,
        "heads": config.num_attention_heads,
        "kv_heads": config.num_key_value_heads,
        "vocab": config.vocab_size,
        "max_positions": config.max_position_embeddings,
        "rope_theta": rope.get("rope_theta", getattr(config, "rope_theta", None)),
        "rms_norm_eps": config.rms_norm_eps,
    }
    return {key: values[key] for key in asdict(TINY_LLAMA)}
