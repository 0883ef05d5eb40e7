"""Fixtures for the pretrained-LM tests: tiny random Llama models (a folder and a GGUF file) and the real SmolLM2.

The tiny models are built in code in well under a second (:func:`iclr26.common.pretrained.random_llama`), so most
tests use them; only the tests that are about SmolLM2-135M-Instruct itself share the session-scoped
:func:`smollm2` fixture.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from iclr26.common.pretrained import TINY_LLAMA, random_llama
from iclr26.common.pretrained.random_model import CHATML_TEMPLATE, SPECIAL_TOKENS, byte_tokens


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    """A Hugging Face folder holding :func:`~iclr26.common.pretrained.random_llama` of :data:`TINY_LLAMA` (2 layers,
    width 16, tied embeddings, float32) and its byte-level tokenizer with SmolLM2's special tokens and ChatML
    template (vocabulary 259)."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    random_llama(TINY_LLAMA, seed=0, save_to=folder)
    return folder


@pytest.fixture
def tiny_lm(tiny_llama_dir):
    """A fresh float32 :class:`PretrainedLM` of :func:`tiny_llama_dir` (tests may train or edit it)."""
    from iclr26.common.pretrained import load_pretrained

    return load_pretrained(tiny_llama_dir, dtype="float32")


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    """A tiny llama GGUF file (float32 tensors, byte-level gpt2-style tokenizer, ChatML template), ~40 kB."""
    import gguf
    import numpy as np

    path = tmp_path_factory.mktemp("tiny-gguf") / "tiny-llama.gguf"
    tokens = [*SPECIAL_TOKENS, *byte_tokens(), "he"]
    shape = TINY_LLAMA
    d, ff, n_layers, heads, kv = shape.hidden, shape.intermediate, shape.layers, shape.heads, shape.kv_heads
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(256)
    writer.add_embedding_length(d)
    writer.add_block_count(n_layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_rope_dimension_count(d // heads)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([3] * len(SPECIAL_TOKENS) + [1] * (len(tokens) - len(SPECIAL_TOKENS)))
    writer.add_token_merges(["h e"])  # transformers' GGUF reader needs at least one merge
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(2)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHATML_TEMPLATE)
    rng = np.random.default_rng(0)

    def tensor(name: str, *shape: int) -> None:
        writer.add_tensor(name, (0.1 * rng.standard_normal(shape)).astype(np.float32))

    tensor("token_embd.weight", len(tokens), d)
    for i in range(n_layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(d, np.float32))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(d, np.float32))
        tensor(f"blk.{i}.attn_q.weight", d, d)
        tensor(f"blk.{i}.attn_k.weight", d // heads * kv, d)
        tensor(f"blk.{i}.attn_v.weight", d // heads * kv, d)
        tensor(f"blk.{i}.attn_output.weight", d, d)
        tensor(f"blk.{i}.ffn_gate.weight", ff, d)
        tensor(f"blk.{i}.ffn_up.weight", ff, d)
        tensor(f"blk.{i}.ffn_down.weight", d, ff)
    writer.add_tensor("output_norm.weight", np.ones(d, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@contextmanager
def no_network() -> Iterator[list]:
    """Refuse every socket connection (``socket.connect``/``connect_ex`` raise); yields the attempts made."""
    attempts: list = []

    def refuse(sock, address, *args):
        attempts.append(address)
        raise OSError(f"network disabled by the test: connection to {address!r} refused")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket.socket, "connect_ex", refuse)
        yield attempts


@dataclass(frozen=True)
class OfflineLoad:
    """A model loaded with every socket connection refused, and the connections that were attempted."""

    lm: Any
    attempts: list


@pytest.fixture(scope="session")
def smollm2() -> OfflineLoad:
    """SmolLM2-135M-Instruct in bfloat16, loaded once per session with the network refused.

    Uses the package cache (``$ICLR26_CACHE`` or ``~/.cache/iclr26``): the first session dequantises the GGUF and
    writes the converted copy (tens of seconds on 2 busy cores), later ones read it (seconds).
    """
    # No skip when the weights are missing: `make test` installs them, and CI must run these tests.
    from iclr26.common.pretrained import load_pretrained

    with no_network() as attempts:
        lm = load_pretrained(dtype="bfloat16")
    return OfflineLoad(lm=lm, attempts=list(attempts))


@pytest.fixture
def offline():
    """The :func:`no_network` context manager: ``with offline() as attempts: ...``."""
    return no_network
