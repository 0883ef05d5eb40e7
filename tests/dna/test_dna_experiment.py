"""The reproduction's config checks (before any work), its call budget, and smoke runs of the whole pipeline."""

from __future__ import annotations

import json

import pytest

from iclr26.common.config import ConfigError, apply_overrides
from iclr26.dna.config import DNAConfig
from iclr26.dna.experiment import budget_of


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        (["held_out=chord,nothing"], "held_out"),
        (["train_max_clauses=5", "test_max_clauses=4"], "test_max_clauses"),
        (["d_model=30", "n_heads=4"], "n_heads"),
        (["n_test=0"], "n_test"),
        (["confidence=0.4"], "confidence"),
        (["concept_prob=1.5"], "concept_prob"),
        (["held_out="], "held_out"),
        (["z3_rlimit=0"], "z3_rlimit"),
        (["min_library_correct=1.5"], "min_library_correct"),
    ],
)
def test_config_errors_name_the_field(overrides, field):
    with pytest.raises(ConfigError, match=f"config field '{field}'"):
        apply_overrides(DNAConfig.preset("smoke"), overrides)


def test_data_key_is_validated_when_the_config_is_built(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "informal": "hello", "formal": "x"}) + "\n")
    with pytest.raises(ConfigError, match="config field 'data': bad.jsonl line 1: field 'informal'"):
        apply_overrides(DNAConfig.preset("smoke"), [f"data={bad}"])


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (None, "does not exist"),
        (b"", "not a GGUF model"),
        (b"\x00\x01binary", "not a GGUF model"),
    ],
)
def test_a_pretrained_model_that_cannot_load_is_refused_before_any_work(tmp_path, content, match):
    path = tmp_path / "model.bin"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError, match=f"config field 'model': .*{match}"):
        apply_overrides(DNAConfig.preset("smoke"), ["pretrained_arm=true", f"model={path}"])
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(ConfigError, match="config field 'model': .*config.json"):
        apply_overrides(DNAConfig.preset("smoke"), [f"model={folder}"])


def test_an_empty_model_or_held_out_is_refused():
    with pytest.raises(ConfigError, match="model"):
        apply_overrides(DNAConfig.preset("smoke"), ["model="])
    with pytest.raises(ConfigError, match="config field 'held_out': name at least one concept"):
        DNAConfig(held_out=())


def test_smoke_run_is_inconclusive_on_the_competence_gate(tmp_path):
    from iclr26.runner import run_experiment

    summary = run_experiment("dna", DNAConfig.preset("smoke"), scale="smoke", out=tmp_path / "runs", quiet=True)
    record = json.loads((summary.run_dir / "result.json").read_text())
    assert record["claim_held"] == "inconclusive"  # three optimizer steps learn nothing: the gates say so
    assert record["evidence"]["gates"]["translator_competent"]["passed"] is False


def test_budget_is_one_pass_plus_the_refine_calls():
    from iclr26.dna.corpus import Clause, make_item

    it = make_item("x", [Clause("onLine", ("a", "l"))], [Clause("notOnLine", ("b", "l"))], "test")
    assert budget_of(it, DNAConfig(refine_calls=2)) == 2 + 1 + 2
    # SmolLM2's arms take their own refine calls, equal across its four arms
    assert budget_of(it, DNAConfig(refine_calls=2, pretrained_refine_calls=0), pretrained=True) == 2 + 1


def test_smoke_run_on_a_user_data_file(tmp_path):
    from iclr26.common.seeding import numpy_rng
    from iclr26.dna.corpus import CONCEPTS, generate_corpus, save_jsonl
    from iclr26.runner import run_experiment

    items = generate_corpus(numpy_rng(5), 3, min_clauses=2, max_clauses=3, concepts=list(CONCEPTS), concept_prob=0.5)
    path = tmp_path / "mine.jsonl"
    save_jsonl(items, path)
    config = apply_overrides(DNAConfig.preset("smoke"), [f"data={path}"])
    summary = run_experiment("dna", config, scale="smoke", out=tmp_path / "runs", quiet=True)
    record = json.loads((summary.run_dir / "result.json").read_text())
    assert record["metrics"]["n_test"] == 3
    assert set(record["metrics"]["tiny"]) == {"direct", "abstract", "decompose", "dna", "dna_placebo"}
    assert record["evidence"]["thresholds"]["confidence"]["value"] == 0.95


@pytest.mark.slow  # transformers' import alone takes ~10 s on the shared machine
def test_smoke_run_with_the_pretrained_arm_on_a_tiny_chat_model(tmp_path):
    from dna_doubles import tiny_chat_lm

    from iclr26.runner import run_experiment

    tiny_chat_lm(tmp_path / "lm")
    config = apply_overrides(DNAConfig.preset("smoke"),
                             ["pretrained_arm=true", f"model={tmp_path / 'lm'}", "n_pretrained=2"])  # fmt: skip
    summary = run_experiment("dna", config, scale="smoke", out=tmp_path / "runs", quiet=True)
    record = json.loads((summary.run_dir / "result.json").read_text())
    assert set(record["metrics"]["smollm2"]) == {"direct", "abstract", "decompose", "dna"}
    assert record["metrics"]["pretrained_model"]["dtype"] == "bfloat16"
    assert record["metrics"]["smollm2_dna_vs_direct"]["n"] == 2
    # SmolLM2's arms are reported, not judged: the verdict is still the small translator's, and its gate fails.
    assert record["claim_held"] == "inconclusive" and "translator_competent" in record["failed_gates"]
