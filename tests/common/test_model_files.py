"""The file check of a local model path: each missing part of a Hugging Face folder named, a GGUF by its magic."""

from __future__ import annotations

import json

import pytest

from iclr26.common.model_files import model_problem


def chat_folder(root, *, weights=True, tokenizer=True, template=True, config=None):
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"model_type": "llama"} if config is None else config))
    if weights:
        (root / "model.safetensors").write_bytes(b"\0")
    if tokenizer:
        tok = {"chat_template": "{{ messages }}"} if template else {}
        (root / "tokenizer_config.json").write_text(json.dumps(tok))
    return root


def test_a_complete_chat_folder_and_a_gguf_pass(tmp_path):
    assert model_problem(chat_folder(tmp_path / "m")) is None
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(8))
    assert model_problem(str(gguf)) is None


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"weights": False}, "without weights"),
        ({"tokenizer": False}, "without a tokenizer"),
        ({"template": False}, "no chat template"),
        ({"config": ["llama"]}, "names no model_type"),
    ],
)
def test_each_missing_part_of_a_folder_is_named(tmp_path, kwargs, match):
    assert match in model_problem(chat_folder(tmp_path / "m", **kwargs))


def test_paths_that_cannot_be_a_model(tmp_path):
    wrong_magic = tmp_path / "w.gguf"
    wrong_magic.write_bytes(b"\x00\x01binary")
    magic_but_not_gguf = tmp_path / "m.bin"
    magic_but_not_gguf.write_bytes(b"GGUF" + bytes(8))
    (tmp_path / "empty").mkdir()
    assert "empty" in model_problem("  ")
    assert "does not exist" in model_problem(tmp_path / "missing")
    for bad in (wrong_magic, magic_but_not_gguf):
        assert "not a GGUF model" in model_problem(bad)
    assert "config.json" in model_problem(tmp_path / "empty")
