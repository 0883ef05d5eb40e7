"""The reproduction's config and data key, its validity rule, its verdict rule, and a smoke run through the CLI."""

from __future__ import annotations

import json

import pytest

from iclr26.common.config import ConfigError
from iclr26.common.experiment import RunContext
from iclr26.dexploration.corpus import proof_to_json, random_proof, save_jsonl
from iclr26.dexploration.env import Entry, Statement
from iclr26.dexploration.experiment import (
    ArmResult,
    DExplorationConfig,
    _outcome,
    conjecture_statement,
    is_nontrivial,
)
from iclr26.dexploration.kernel import Z3Kernel
from iclr26.dexploration.logic import fact
from tests.conftest import smoke_record
from tests.dexploration.test_dexploration_transform import PROOF


def _smoke(**kw) -> DExplorationConfig:
    return DExplorationConfig(**{**DExplorationConfig.preset_values("smoke"), **kw})


def test_config_rejects_bad_values():
    bad = (({"n_seeds": 0}, "n_seeds"), ({"max_vars": 5}, "max_vars"), ({"confidence": 0.4}, "confidence"),
           ({"coq_accept_min": 0.0}, "coq_accept_min"), ({"backward_prob": 2.0}, "backward_prob"))  # fmt: skip
    for kw, name in bad:
        with pytest.raises(ConfigError, match=name):
            _smoke(**kw)


def test_data_key_accepts_a_corpus_file_and_names_the_bad_line(tmp_path):
    import numpy as np

    good = tmp_path / "corpus.jsonl"
    save_jsonl([PROOF, random_proof(np.random.default_rng(0))], good)
    assert _smoke(data=good).data == good
    obj = proof_to_json(PROOF)
    wrong = json.loads(json.dumps(obj))
    wrong["proof"][0]["fact"] = "2 * x <= 3"  # does not follow from x <= 2 (and h4 feeds the rest)
    cases = {
        "notjson.jsonl": ("{oops\n", "line 1: not JSON"),
        "missing.jsonl": (json.dumps({"variables": ["x"]}) + "\n", "missing field 'hypotheses'"),
        "wrongstep.jsonl": (json.dumps(obj) + "\n" + json.dumps(wrong) + "\n", "line 2: step h4"),
        "badfact.jsonl": (json.dumps({**obj, "goal": ["h7", "x <="]}) + "\n", "does not parse"),
        "empty.jsonl": ("\n", "holds no proofs"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ConfigError, match=f"'data'.*{message}"):
            _smoke(data=path)
    with pytest.raises(ConfigError, match="'data'.*cannot read"):
        _smoke(data=tmp_path / "absent.jsonl")


def test_nontrivial_rule():
    k = Z3Kernel()
    binders = (Entry("var", "x"), Entry("var", "y"), Entry("hyp", "h1", fact("x <= 2")),
               Entry("hyp", "h2", fact("- y <= - 1")))  # fmt: skip
    assert not is_nontrivial(Statement(binders, (), fact("- x * x <= 0")), k)  # x^2 >= 0 is a tautology
    assert not is_nontrivial(Statement(binders, (), fact("x <= 5")), k)  # follows from h1 alone
    assert is_nontrivial(Statement(binders, (), fact("x - y <= 1")), k)  # needs h1 and h2


def test_conjecture_statement_reasons():
    assert conjecture_statement("INTRO x ; HYP y <= 1 ; GOAL x <= 1 ;".split())[2] == "unbound_variable"
    assert conjecture_statement("INTRO x ; INTRO x ; GOAL x <= 1 ;".split())[2] == "duplicate_variable"
    assert conjecture_statement("INTRO x ; GOAL x <= 1 ;".split())[2] == "no_hypothesis"
    binders, goal, reason = conjecture_statement("INTRO x ; HYP x <= 1 ; GOAL 2 * x <= 2 ;".split())
    assert reason is None and goal == fact("2 * x <= 2") and [b.name for b in binders] == ["x", "h1"]


def _arm(valid: int, tokens: int, coq: tuple[int, int]) -> ArmResult:
    return ArmResult(episodes=10, outputs=coq[1], valid=valid, distinct_valid=valid, tokens=tokens, kernel_queries=0,
                     proof_lengths=[1] * valid, dag_depths=[1] * valid, hard=[False] * valid, coq_checked=coq[1],
                     coq_accepted=coq[0], rejections={}, ends={}, examples=[])  # fmt: skip


def test_verdict_rule_needs_every_part_and_the_failing_control(tmp_path):
    cfg = _smoke(n_seeds=3)
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    base = {"dexplorer": [_arm(v, 1000, (v, v)) for v in (6, 7, 8)], "ctp": [_arm(v, 900, (v, v)) for v in (1, 0, 2)],
            "unchecked": [_arm(1, 500, (2, 5))] * 3}  # fmt: skip
    # success 0.6/0.7/0.8 vs 0.1/0/0.2; tokens/valid 1000/(v+1) vs 900/(v+1): ratio > 1 on every seed
    held = _outcome(cfg, ctx, base, {}, 0.0)
    assert held.claim_held and held.evidence["control_fails"]
    one_rejected = {**base, "dexplorer": [*base["dexplorer"][:2], _arm(8, 1000, (7, 8))]}
    assert not _outcome(cfg, RunContext(out_dir=tmp_path, seed=0, quiet=True), one_rejected, {}, 0.0).claim_held
    control_passes = {**base, "unchecked": [_arm(1, 500, (5, 5))] * 3}
    assert not _outcome(cfg, RunContext(out_dir=tmp_path, seed=0, quiet=True), control_passes, {}, 0.0).claim_held
    costly = {**base, "dexplorer": [_arm(v, 90_000, (v, v)) for v in (6, 7, 8)]}
    res = _outcome(cfg, RunContext(out_dir=tmp_path, seed=0, quiet=True), costly, {}, 0.0)
    assert not res.claim_held and res.evidence["success_rate_gain"]["passes"]
    assert set(res.evidence["thresholds"]) == {"success_margin", "token_margin", "coq_accept_min", "confidence"}


def test_smoke_run_through_the_cli(tmp_path):
    rec = smoke_record("dexploration", tmp_path)
    arms = rec["metrics"]["arms"]
    assert set(arms) == {"dexplorer", "unchecked", "ctp"}
    assert all(a["episodes"] == 4 and a["tokens"] > 0 for a in arms.values())
    assert "train-explorer-seed0" in rec["units"] and "episodes-ctp-seed0" in rec["units"]
