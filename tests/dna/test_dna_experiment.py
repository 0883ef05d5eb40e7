"""The reproduction's config validation, its verdict statistics, and a smoke run on a user data file."""

from __future__ import annotations

import json

import pytest
from scipy import stats

from iclr26.common.config import ConfigError, apply_overrides
from iclr26.dna.experiment import DNAConfig, budget_of, compare


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        (["held_out=chord,nothing"], "held_out"),
        (["train_max_clauses=5", "test_max_clauses=4"], "test_max_clauses"),
        (["d_model=30", "n_heads=4"], "n_heads"),
        (["n_test=0"], "n_test"),
        (["confidence=0.4"], "confidence"),
        (["concept_prob=1.5"], "concept_prob"),
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


def test_compare_hand_computed():
    # d = [0, 0, 1, 1]: mean 0.5, sd = sqrt(1/3), se = sd / 2; lower = 0.5 − t_{.95,3} · se
    got = compare([False, True, True, True], [False, True, False, False], [2, 3, 4, 5], margin=0.0,
                  slope_margin=0.0, confidence=0.95)  # fmt: skip
    se = (1 / 3) ** 0.5 / 2
    assert got.mean == pytest.approx(0.5) and got.lower_bound == pytest.approx(0.5 - stats.t.ppf(0.95, 3) * se)
    assert not got.passes
    # OLS of d on length: slope = Sxy / Sxx = 2 / 5; residuals (.1, −.3, .3, −.1), s² = 0.2 / 2, stderr = √(s²/5)
    assert got.slope == pytest.approx(0.4)
    assert got.slope_lower_bound == pytest.approx(0.4 - stats.t.ppf(0.95, 2) * (0.1 / 5) ** 0.5)
    assert not got.slope_passes
    strong = compare([True] * 8 + [False] * 2, [False] * 10, list(range(2, 12)), margin=0.0, slope_margin=0.0,
                     confidence=0.95)  # fmt: skip
    assert strong.passes and strong.mean == pytest.approx(0.8)
    assert strong.slope < 0 and not strong.slope_passes  # the gain shrinks with length here
    flat = compare([False] * 4, [False] * 4, [2, 3, 4, 5], margin=0.0, slope_margin=0.0, confidence=0.95)
    assert (flat.mean, flat.slope, flat.slope_lower_bound, flat.passes, flat.slope_passes) == (0, 0, 0, False, False)


def test_budget_is_one_pass_plus_the_refine_calls():
    from iclr26.dna.corpus import Clause, make_item

    it = make_item("x", [Clause("onLine", ("a", "l"))], [Clause("notOnLine", ("b", "l"))], "test")
    assert budget_of(it, DNAConfig(refine_calls=2)) == 2 + 1 + 2


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
    from dna_helpers import tiny_chat_lm

    from iclr26.runner import run_experiment

    tiny_chat_lm(tmp_path / "lm")
    config = apply_overrides(DNAConfig.preset("smoke"),
                             ["pretrained_arm=true", f"model={tmp_path / 'lm'}", "n_pretrained=2"])  # fmt: skip
    summary = run_experiment("dna", config, scale="smoke", out=tmp_path / "runs", quiet=True)
    record = json.loads((summary.run_dir / "result.json").read_text())
    assert set(record["metrics"]["smollm2"]) == {"direct", "abstract", "decompose", "dna"}
    assert record["metrics"]["pretrained_model"]["dtype"] == "bfloat16"
    assert "smollm2_dna_vs_direct" in record["evidence"]
