"""The reproduction's config and data key, its validity rules, and a smoke run through the CLI (the arms' wiring)."""

from __future__ import annotations

import json

import pytest

from iclr26.common.config import ConfigError
from iclr26.dexploration.config import DExplorationConfig
from iclr26.dexploration.corpus import proof_to_json, random_proof, save_jsonl
from iclr26.dexploration.env import Entry, Statement
from iclr26.dexploration.experiment import conjecture_statement, is_nonlinear, is_nontrivial
from iclr26.dexploration.kernel import Z3Kernel
from iclr26.dexploration.logic import fact
from tests.conftest import smoke_record
from tests.dexploration.test_dexploration_transform import PROOF


def _smoke(**kw) -> DExplorationConfig:
    return DExplorationConfig(**{**DExplorationConfig.preset_values("smoke"), **kw})


def test_config_rejects_bad_values():
    bad = (({"n_seeds": 0}, "n_seeds"), ({"max_vars": 5}, "max_vars"), ({"confidence": 0.4}, "confidence"),
           ({"coq_accept_min": 0.0}, "coq_accept_min"), ({"backward_prob": 2.0}, "backward_prob"),
           ({"kernel_rlimit": 0}, "kernel_rlimit"), ({"coqc_timeout_s": 0}, "coqc_timeout_s"))  # fmt: skip
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


def test_nonlinear_rule_tells_a_linear_sum_from_a_product_of_bounds():
    linear = Z3Kernel(mode="linear")
    binders = (Entry("var", "x"), Entry("var", "y"), Entry("hyp", "h1", fact("x <= 1")),
               Entry("hyp", "h2", fact("y <= 1")), Entry("hyp", "h3", fact("- x <= 0")))  # fmt: skip
    assert not is_nonlinear(Statement(binders, (), fact("x + y <= 2")), linear)  # the trivial script's conclusion
    # 0 <= x <= 1 gives x * x <= x, which needs the product (1 - x) * x >= 0.
    assert is_nonlinear(Statement(binders, (), fact("x * x - x <= 0")), linear)


def test_conjecture_statement_reasons():
    assert conjecture_statement("INTRO x ; HYP y <= 1 ; GOAL x <= 1 ;".split())[2] == "unbound_variable"
    assert conjecture_statement("INTRO x ; INTRO x ; GOAL x <= 1 ;".split())[2] == "duplicate_variable"
    assert conjecture_statement("INTRO x ; GOAL x <= 1 ;".split())[2] == "no_hypothesis"
    binders, goal, reason = conjecture_statement("INTRO x ; HYP x <= 1 ; GOAL 2 * x <= 2 ;".split())
    assert reason is None and goal == fact("2 * x <= 2") and [b.name for b in binders] == ["x", "h1"]


def test_smoke_run_through_the_cli(tmp_path):
    rec = smoke_record("dexploration", tmp_path)
    arms = rec["metrics"]["arms"]
    assert set(arms) == {"dexplorer", "unchecked", "ctp", "trivial_script"}
    assert arms["dexplorer"]["episodes"] == 4 and all(a["tokens"] > 0 for a in arms.values())
    # Conjecture-then-Prove and the script spend DExplorer's tokens (up to one more sample), not its episode count.
    budget = arms["dexplorer"]["tokens"]
    assert budget - 200 < arms["ctp"]["tokens"] <= budget and budget - 25 < arms["trivial_script"]["tokens"] <= budget
    # No finite cost without a valid statement.
    for a in arms.values():
        for v, cost in zip(a["success_rate_per_seed"], a["tokens_per_valid_per_seed"], strict=True):
            assert (cost is None) == (v == 0)
    assert "train-explorer-seed0" in rec["units"] and "episodes-trivial_script-seed0" in rec["units"]
    # Four training steps teach the conjecturer no well-formed statement: the baseline gate must say so.
    assert rec["evidence"]["gates"]["baseline_writes_statements"]["ctp_wellformed_per_seed"] == [0]
    assert rec["claim_held"] == "inconclusive" and rec["failed_gates"] == ["baseline_writes_statements"]
