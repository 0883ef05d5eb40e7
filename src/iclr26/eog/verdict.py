"""The verdict of the Explore-on-Graph reproduction, a pure function of per-seed numbers.

The rule, fixed before any run (paired one-sided Student t across seeds at ``confidence``): (a) EoG beats SFT-only on
OOD Hits@1 and (b) beats imitation on OOD Hits@1 (lower bound > ``min_gain``); (c) EoG's path faithfulness (ID and
OOD questions pooled) beats GRPO(F1)'s; (d) EoG's F1 (pooled) is not lower than GRPO(F1)'s by more than
``f1_tolerance`` (lower bound of the difference > −tolerance); and (e) the control: EoG's faithfulness beats the
placebo's, the arm whose path term scores random off-path triples. The placebo still rewards citing triples in the
right format, which GRPO(F1) learns to drop, so it may rise above GRPO(F1) a little; what it must not do is reach
EoG, whose path term scores the gold path. The claim holds iff (a)–(e) pass.

Gates (else inconclusive): the SFT start answers in the output format (``min_valid`` of its test outputs parse),
and RL moves the policy at all (GRPO(F1)'s pooled F1, the reward it optimises, beats the SFT start's with margin
``min_rl_gain``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.eog.config import EogConfig


@dataclass(frozen=True)
class Measurements:
    """What the verdict reads: per arm, one number per seed (seeds paired across arms).

    Attributes:
        ood_hits: arm -> mean Hits@1 on the OOD test questions.
        faithfulness: arm -> mean path faithfulness on the ID and OOD test questions pooled.
        f1: arm -> mean answer F1 on the pooled test questions.
        off_path: arm -> mean off-path citations per pooled test question.
        valid: arm -> share of the pooled test outputs that parse.
    """

    ood_hits: dict[str, list[float]]
    faithfulness: dict[str, list[float]]
    f1: dict[str, list[float]]
    off_path: dict[str, list[float]]
    valid: dict[str, list[float]]


def paired(x: Sequence[float], y: Sequence[float], *, confidence: float, null: float) -> dict[str, Any]:
    """One-sided paired Student t-test of ``x − y`` across seeds: passes when its lower bound exceeds ``null``."""
    t = paired_t(list(x), list(y), confidence=confidence, null=null, moments="exact")
    return {
        "per_seed": [a - b for a, b in zip(x, y, strict=True)],
        "mean": t.mean,
        "ci95": [t.ci_low, t.ci_high],
        "lower_bound": t.lower,
        "p_greater": t.p_greater,
        "passes": bool(t.lower > null),
    }


#: The verdict's parts: name -> the test that decides it (``passes``).
PARTS = {
    "a_eog_beats_sft_ood": "eog_vs_sft_ood_hits",
    "b_eog_beats_imitation_ood": "eog_vs_imitation_ood_hits",
    "c_path_reward_raises_faithfulness": "eog_vs_grpo_f1_faithfulness",
    "d_f1_within_tolerance": "eog_vs_grpo_f1_f1",
    "e_eog_beats_placebo_faithfulness": "eog_vs_placebo_faithfulness",
}


def paired_tests(m: Measurements, config: EogConfig) -> dict[str, dict[str, Any]]:
    """The verdict's tests (:data:`PARTS`), the gate's, and those only reported."""

    def test(x: list[float], y: list[float], null: float) -> dict[str, Any]:
        return paired(x, y, confidence=config.confidence, null=null)

    gain = config.min_gain
    return {
        "eog_vs_sft_ood_hits": test(m.ood_hits["eog"], m.ood_hits["sft"], gain),
        "eog_vs_imitation_ood_hits": test(m.ood_hits["eog"], m.ood_hits["imitation"], gain),
        "eog_vs_grpo_f1_faithfulness": test(m.faithfulness["eog"], m.faithfulness["grpo_f1"], gain),
        "eog_vs_grpo_f1_f1": test(m.f1["eog"], m.f1["grpo_f1"], -config.f1_tolerance),
        "eog_vs_placebo_faithfulness": test(m.faithfulness["eog"], m.faithfulness["placebo"], gain),
        "grpo_f1_vs_sft_f1": test(m.f1["grpo_f1"], m.f1["sft"], config.min_rl_gain),
        "placebo_vs_grpo_f1_faithfulness": test(m.faithfulness["placebo"], m.faithfulness["grpo_f1"], gain),
        "grpo_f1_vs_sft_ood_hits": test(m.ood_hits["grpo_f1"], m.ood_hits["sft"], gain),
        "eog_vs_grpo_f1_off_path": test(m.off_path["eog"], m.off_path["grpo_f1"], 0.0),
    }


def gates(m: Measurements, config: EogConfig, tests: dict[str, dict[str, Any]]) -> list[Gate]:
    """What must hold for the comparison to mean anything (module docstring)."""
    valid = float(np.mean(m.valid["sft"]))
    rl = tests["grpo_f1_vs_sft_f1"]
    return [
        Gate("sft_outputs_parse", valid >= config.min_valid, {"sft_valid": valid, "min_valid": config.min_valid}),
        Gate(
            "rl_raises_f1",
            rl["passes"],
            {"grpo_f1_minus_sft_f1": rl["mean"], "lower_bound": rl["lower_bound"], "min_rl_gain": config.min_rl_gain},
        ),
    ]


def verdict(m: Measurements, config: EogConfig) -> Verdict:
    """Held iff parts (a)–(e) pass; inconclusive if a gate fails (module docstring)."""
    tests = paired_tests(m, config)
    parts = {part: tests[name]["passes"] for part, name in PARTS.items()}
    evidence = {
        "test": f"one-sided paired Student t across {config.n_seeds} seeds, confidence {config.confidence}",
        "parts": parts,
        **{name: _brief(tests[name]) for name in PARTS.values()},
        "reported_not_in_verdict": {
            k: _brief(v) for k, v in tests.items() if k not in PARTS.values() and k != "grpo_f1_vs_sft_f1"
        },
        "thresholds": {
            n: threshold(config, n) for n in ("confidence", "min_gain", "f1_tolerance", "min_valid", "min_rl_gain")
        },
    }

    def fmt(name: str) -> str:
        t = tests[name]
        return f"{t['mean']:+.3f} (lb {t['lower_bound']:+.3f})"

    hits = {arm: float(np.mean(v)) for arm, v in m.ood_hits.items()}
    measurement = (
        f"OOD Hits@1: EoG {hits['eog']:.3f}, GRPO(F1) {hits['grpo_f1']:.3f}, imitation {hits['imitation']:.3f}, "
        f"SFT {hits['sft']:.3f}; EoG−SFT {fmt('eog_vs_sft_ood_hits')}, EoG−imitation "
        f"{fmt('eog_vs_imitation_ood_hits')}; faithfulness EoG−GRPO(F1) {fmt('eog_vs_grpo_f1_faithfulness')}, "
        f"EoG−placebo {fmt('eog_vs_placebo_faithfulness')}; F1 EoG−GRPO(F1) {fmt('eog_vs_grpo_f1_f1')}"
    )
    return Verdict.decide(gates(m, config, tests), held=all(parts.values()), evidence=evidence, measurement=measurement)


def _brief(test: dict[str, Any]) -> dict[str, Any]:
    """A test as the evidence holds it (the per-seed differences are in the record's metrics)."""
    return {"mean": test["mean"], "lower_bound": test["lower_bound"], "passes": test["passes"]}


__all__ = ["PARTS", "Measurements", "gates", "paired", "paired_tests", "verdict"]
