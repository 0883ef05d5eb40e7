"""The DExploration verdict through its public function, on synthetic per-seed counts: each part can flip it.

Every arm spends 10,000 tokens per seed, so a count c is c / 10 per 1,000 tokens. DExplorer's distinct valid
counts (40, 44, 48) against CtP's (10, 12, 8) give gains of (3.0, 3.2, 4.0) per 1k tokens: mean 3.4, sd 0.53,
one-sided 95% lower bound 3.4 − 2.92 · 0.53 / √3 = 2.5 > 0.
"""

from __future__ import annotations

import dataclasses

from iclr26.dexploration.config import DExplorationConfig
from iclr26.dexploration.experiment import measurements, run_trivial_script
from iclr26.dexploration.verdict import Measurements, verdict

CONFIG = DExplorationConfig.preset("cpu")
TOKENS = 10_000


def measured(**override) -> Measurements:
    """Held numbers on three seeds; ``override`` replaces whole fields (or arms of a field, given as dicts)."""
    base = {
        "tokens": {a: [TOKENS] * 3 for a in ("dexplorer", "ctp", "unchecked", "trivial_script")},
        "valid": {"dexplorer": [40, 44, 48], "ctp": [10, 12, 8], "unchecked": [5, 6, 7], "trivial_script": [1] * 3},
        "nonlinear": {"dexplorer": [20, 22, 25], "ctp": [4, 5, 3], "unchecked": [2, 2, 2], "trivial_script": [0] * 3},
        "coq_checked": {"dexplorer": [40, 44, 48], "ctp": [10, 12, 8], "unchecked": [30, 30, 30],
                        "trivial_script": [400] * 3},
        "coq_accepted": {"dexplorer": [40, 44, 48], "ctp": [10, 12, 8], "unchecked": [12, 15, 9],
                         "trivial_script": [400] * 3},
        "ctp_wellformed": [60, 70, 65],
    }  # fmt: skip
    for name, value in override.items():
        base[name] = {**base[name], **value} if isinstance(value, dict) else value
    return Measurements(**base)


def test_held_when_both_yields_win_every_output_compiles_and_the_control_fails():
    v = verdict(measured(), CONFIG)
    assert v.status == "held" and v.failed_gates == ()
    assert abs(v.evidence["valid_per_ktoken_gain"]["mean"] - 3.4) < 1e-9
    assert v.evidence["control_fails"] and v.evidence["coq_all_accepted"]
    assert set(v.evidence["gates"]) == {"trivial_script_fails", "baseline_writes_statements"}


def test_no_gain_in_non_linear_statements_is_not_held():
    # More valid statements, but the non-trivial ones come at CtP's rate: complexity is part of the claim.
    v = verdict(measured(nonlinear={"dexplorer": [4, 5, 3]}), CONFIG)
    assert v.status == "not held" and not v.evidence["nonlinear_per_ktoken_gain"]["passes"]


def test_a_control_that_passes_changes_the_verdict():
    # The unchecked agent's outputs all compile: coqc acceptance could not have failed, so the claim is not shown.
    assert verdict(measured(coq_accepted={"unchecked": [30, 30, 30]}), CONFIG).status == "not held"
    # A control with no output at all has nothing coqc rejects: not held either.
    assert verdict(measured(coq_checked={"unchecked": [0] * 3}, coq_accepted={"unchecked": [0] * 3}),
                   CONFIG).status == "not held"  # fmt: skip


def test_one_rejected_certificate_is_not_held():
    assert verdict(measured(coq_accepted={"dexplorer": [40, 44, 47]}), CONFIG).status == "not held"


def test_a_baseline_that_writes_no_statements_gives_inconclusive():
    v = verdict(measured(ctp_wellformed=[60, 3, 65]), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("baseline_writes_statements",)


def test_a_trivial_script_that_passes_the_metric_gives_inconclusive():
    v = verdict(measured(nonlinear={"trivial_script": [20, 22, 25]}, valid={"trivial_script": [40, 44, 48]}), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("trivial_script_fails",)


def test_the_scripted_episode_fails_the_verdict_in_place_of_dexplorer():
    # The 25-token script run through the checked environment and evaluated as the reproduction does (coqc
    # included), repeated to DExplorer's tokens: every output is valid and compiles, but it is one distinct
    # statement that linear arithmetic proves, so it beats no baseline that writes a few real statements.
    script = run_trivial_script(CONFIG, TOKENS)
    assert script.tokens == TOKENS and script.coq_accepted == script.coq_checked == TOKENS // 25
    assert script.distinct_valid == 1 and script.distinct_nonlinear == 0
    m = measured()
    as_dexplorer = measurements({"dexplorer": [script] * 3})
    fields = {f.name: {**getattr(m, f.name), "dexplorer": getattr(as_dexplorer, f.name)["dexplorer"]}
              for f in dataclasses.fields(m) if f.name != "ctp_wellformed"}  # fmt: skip
    v = verdict(dataclasses.replace(m, **fields), CONFIG)
    assert v.status == "not held"
    assert not v.evidence["valid_per_ktoken_gain"]["passes"] and not v.evidence["nonlinear_per_ktoken_gain"]["passes"]


def test_tokens_per_valid_only_where_both_arms_have_valid_outputs():
    v = verdict(measured(valid={"ctp": [0, 12, 0]}), CONFIG)
    cost = v.evidence["tokens_per_valid_where_both_valid"]
    assert cost == {"seeds": [1], "dexplorer": [TOKENS / 44], "ctp": [TOKENS / 12]}
    none = verdict(measured(valid={"ctp": [0, 0, 0]}), CONFIG)
    assert none.evidence["tokens_per_valid_where_both_valid"]["seeds"] == []
    assert "tokens/valid not reported" in none.measurement
