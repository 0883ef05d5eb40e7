"""``model=PATH``: any local Hugging Face causal LM folder runs the reproduction; a path that cannot be one is refused
before any work (one line, exit 2, nothing written)."""

import json

import pytest

from iclr26.biasfree.config import BiasFreeConfig
from iclr26.biasfree.training import lora_targets
from iclr26.common.config import ConfigError
from iclr26.common.model_files import model_problem
from iclr26.common.pretrained import random_llama


@pytest.fixture
def folder(tmp_path):
    """The tiny random Llama saved as a Hugging Face model folder (config, safetensors, tokenizer, chat template)."""
    lm = random_llama(seed=0)
    path = tmp_path / "tiny-llama"
    lm.model.save_pretrained(path)
    lm.tokenizer.save_pretrained(path)
    return path


def test_a_hugging_face_folder_runs_the_smoke_through_the_cli(folder, tmp_path, cli):
    out = tmp_path / "runs"
    proc = cli("run", "biasfree", "--scale", "smoke", "--out", str(out), "--quiet", "--set", f"model={folder}",
               "--set", "dtype=float32")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (record,) = (out / "biasfree").glob("*/result.json")
    rec = json.loads(record.read_text())
    assert rec["config"]["model"] == str(folder) and set(rec["metrics"]["train"]) >= {"sft", "dpo", "task_vector"}


def test_lora_targets_every_linear_layer_but_the_head():
    assert lora_targets(random_llama()) == ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj",
                                              "v_proj"]  # fmt: skip


def _broken(folder, name):
    if name == "no weights":
        (folder / "model.safetensors").unlink()
    elif name == "no chat template":
        (folder / "chat_template.jinja").unlink()
        tok = json.loads((folder / "tokenizer_config.json").read_text())
        tok.pop("chat_template", None)
        (folder / "tokenizer_config.json").write_text(json.dumps(tok))
    elif name == "bad config":
        (folder / "config.json").write_text("[]")
    elif name == "no tokenizer":
        for f in ("tokenizer.json", "tokenizer_config.json"):
            (folder / f).unlink()
    return folder


BROKEN = [("no weights", "without weights"), ("no chat template", "chat template"), ("bad config", "model_type"),
          ("no tokenizer", "without a tokenizer")]  # fmt: skip


@pytest.mark.parametrize(("name", "why"), BROKEN)
def test_a_folder_that_is_no_instruct_model_is_refused(folder, name, why):
    with pytest.raises(ConfigError, match=f"'model'.*{why}"):
        BiasFreeConfig(model=str(_broken(folder, name)))


def test_binary_and_empty_paths_are_refused_in_one_line_before_any_work(tmp_path, cli):
    binary = tmp_path / "weights.gguf"
    binary.write_bytes(bytes(range(256)) * 4)  # named .gguf, but not a GGUF file
    for bad in (str(binary), ""):
        out = tmp_path / "runs"
        proc = cli("run", "biasfree", "--scale", "smoke", "--out", str(out), "--quiet", "--set", f"model={bad}")
        assert proc.returncode == 2, (bad, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "'model'" in lines[0], (bad, proc.stderr)
        assert not out.exists()


def test_other_paths_that_cannot_be_a_model_are_refused(tmp_path):
    notgguf = tmp_path / "model.bin"
    notgguf.write_bytes(b"GGUF" + bytes(64))  # the magic, but not a .gguf
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    for bad in (str(notgguf), " ", str(empty_dir), str(tmp_path / "missing")):
        with pytest.raises(ConfigError, match="'model'"):
            BiasFreeConfig(model=bad)
    assert model_problem(str(gguf)) is None  # the file check only reads the magic; loading tells the rest
