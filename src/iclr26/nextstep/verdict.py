"""The verdict of the NextStep-1 reproduction, a pure function of per-seed sample metrics.

Gates (a failed one makes the verdict ``inconclusive``): every arm ran; the judge's accuracy on held-out real images
reaches ``min_judge_accuracy``; each tokenizer's ceiling (the judge's faithfulness on its reconstructions of held-out
real images) reaches ``min_faithfulness``, so that a low faithfulness measures the head and not the tokenizer; and
the control ``fm_shuffled`` (labels permuted across images) stays below ``min_faithfulness``, so that the judge tells
prompts apart.

Checks, with guidance on, each paired over seeds with the ``ci_level`` Student-t interval of the mean difference:
FM beats regression and VQ on the Fréchet distance (interval above 0); FM's within-class diversity beats the
regression head's (the collapse the paper's argument against regression heads predicts); FM's faithfulness is
non-inferior to the regression head's (interval above ``-faith_noninferiority_margin``: a collapsed head that draws
the class mean is easy to classify, so superiority would reward the collapse) and beats VQ's (above 0); guidance
raises FM's faithfulness (above 0); and FM's guided faithfulness reaches ``min_faithfulness``. Held when every gate
and every check passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.nextstep.config import BASELINES, NextStepConfig

SETTINGS = ("no_cfg", "cfg")
METRICS = ("faithfulness", "fd", "diversity")


@dataclass(frozen=True)
class Measurements:
    """Per-seed sample metrics of every arm that ran (seed k is entry k of every list), and the test bed's gauges.

    Attributes:
        samples: arm -> setting (``no_cfg``, ``cfg``) -> metric (``faithfulness``, ``fd``, ``diversity``) -> per seed.
        judge_accuracy: the judge's accuracy on held-out real images.
        ceilings: tokenizer kind (``continuous``, ``vq``) -> the judge's faithfulness on its reconstructions of the
            held-out real images (the best faithfulness an arm on that tokenizer could reach).
    """

    samples: Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]]
    judge_accuracy: float
    ceilings: Mapping[str, float] = field(default_factory=dict)

    def series(self, arm: str, setting: str, metric: str) -> np.ndarray:
        """The per-seed values of one arm, setting and metric."""
        return np.asarray(self.samples[arm][setting][metric], dtype=float)

    def mean(self, arm: str, setting: str, metric: str) -> float:
        """Their mean over seeds."""
        return float(self.series(arm, setting, metric).mean())


def paired(a: np.ndarray, b: np.ndarray, *, level: float) -> dict[str, Any]:
    """Seed-paired difference ``d = a - b`` with a Student-t interval.

    Returns:
        ``mean``, ``se`` = sd / sqrt(n) (ddof 1), ``ci_low``/``ci_high`` = mean -/+ t_{(1+level)/2, n-1} se,
        ``wins`` (seeds with d > 0), ``n`` and ``above_zero`` (ci_low > 0; never with one seed), ``p`` (two-sided
        paired t-test; None with one seed or zero spread).
    """
    t = paired_t(a, b, level=level)
    if t.n < 2:
        return {"mean": t.mean, "se": None, "ci_low": None, "ci_high": None, "wins": t.wins, "n": t.n,
                "above_zero": False, "p": None}  # fmt: skip
    return {"mean": t.mean, "se": t.se, "ci_low": t.ci_low, "ci_high": t.ci_high, "wins": t.wins, "n": t.n,
            "above_zero": t.ci_low > 0, "p": t.p_two_sided if t.se > 0 else None}  # fmt: skip


def comparisons(m: Measurements, setting: str, *, level: float) -> dict[str, dict[str, Any]]:
    """FM against each baseline that ran, in one guidance setting (positive = FM better: lower FD, higher faith)."""
    out = {}
    for other in (a for a in BASELINES if a in m.samples):
        out[f"fd_{other}_minus_fm"] = paired(m.series(other, setting, "fd"), m.series("fm", setting, "fd"), level=level)
        out[f"faith_fm_minus_{other}"] = paired(
            m.series("fm", setting, "faithfulness"), m.series(other, setting, "faithfulness"), level=level
        )
    return out


def gates(m: Measurements, config: NextStepConfig) -> list[Gate]:
    """The test bed's gates (module docstring)."""
    bar = config.min_faithfulness
    missing = [a for a in ("reg", "vq", "fm_shuffled") if a not in m.samples]
    control = m.mean("fm_shuffled", "cfg", "faithfulness") if "fm_shuffled" in m.samples else None
    out = [
        Gate("all_arms_ran", not missing, {"missing": missing}),
        Gate(
            "judge_accuracy",
            m.judge_accuracy >= config.min_judge_accuracy,
            {"value": m.judge_accuracy, "threshold": config.min_judge_accuracy},
        ),
        Gate(
            "control_fails_faithfulness_bar",
            control is not None and control < bar,
            {"fm_shuffled_faithfulness_cfg": control, "threshold": bar},
        ),
    ]
    kinds = ("continuous", "vq") if "vq" in m.samples else ("continuous",)
    for kind in kinds:
        ceiling = m.ceilings.get(kind)
        out.append(
            Gate(
                f"tokenizer_ceiling_{kind}",
                ceiling is not None and ceiling >= bar,
                {"value": ceiling, "threshold": bar},
            )
        )
    return out


def checks(m: Measurements, config: NextStepConfig) -> tuple[dict[str, dict[str, Any]], dict[str, bool]]:
    """The paired comparisons with guidance on and whether each check passes (module docstring)."""
    level, delta = config.ci_level, config.faith_noninferiority_margin
    comps = comparisons(m, "cfg", level=level)
    if "reg" in m.samples:
        comps["div_fm_minus_reg"] = paired(
            m.series("fm", "cfg", "diversity"), m.series("reg", "cfg", "diversity"), level=level
        )
    comps["faith_fm_cfg_minus_no_cfg"] = paired(
        m.series("fm", "cfg", "faithfulness"), m.series("fm", "no_cfg", "faithfulness"), level=level
    )
    passed = {name: bool(c["above_zero"]) for name, c in comps.items()}
    if "faith_fm_minus_reg" in comps:  # non-inferiority: FM >= reg - delta, the interval above -delta
        low = comps["faith_fm_minus_reg"]["ci_low"]
        passed["faith_fm_minus_reg"] = low is not None and low > -delta
    passed["fm_reaches_min_faithfulness"] = m.mean("fm", "cfg", "faithfulness") >= config.min_faithfulness
    return comps, passed


def verdict(m: Measurements, config: NextStepConfig) -> Verdict:
    """Held when every gate and every check passes (module docstring)."""
    comps, passed = checks(m, config)
    names = ("min_faithfulness", "faith_noninferiority_margin", "min_judge_accuracy", "ci_level", "cfg_scale")
    evidence = {
        "comparisons_cfg_on": comps,
        "checks": passed,
        "fm_faithfulness_cfg": m.mean("fm", "cfg", "faithfulness"),
        "tokenizer_ceilings": dict(m.ceilings),
        "n_seeds": len(m.series("fm", "cfg", "fd")),
        "test": (
            f"paired Student-t over seeds, {config.ci_level:.0%} interval of the mean difference above 0 "
            f"(above -{config.faith_noninferiority_margin:g} for faithfulness against reg: non-inferiority)"
        ),
        "thresholds": {name: threshold(config, name) for name in names},
    }
    return Verdict.decide(
        gates(m, config),
        held=all(passed.values()),
        evidence=evidence,
        measurement=_measurement(m, config),
        notes=_notes(m, passed),
    )


def _measurement(m: Measurements, config: NextStepConfig) -> str:
    parts = [
        f"{arm}: faith {m.mean(arm, 'no_cfg', 'faithfulness'):.2f}->{m.mean(arm, 'cfg', 'faithfulness'):.2f}, "
        f"FD {m.mean(arm, 'cfg', 'fd'):.1f}"
        for arm in m.samples
    ]
    n = len(m.series("fm", "cfg", "fd"))
    return f"{n} seed{'s' if n > 1 else ''}, guided w={config.cfg_scale:g}: " + "; ".join(parts)


def _notes(m: Measurements, passed: dict[str, bool]) -> str:
    n = len(m.series("fm", "cfg", "fd"))
    ceilings = ", ".join(f"{k} {v:.3f}" for k, v in m.ceilings.items())
    notes = f"Judge accuracy on held-out real images {m.judge_accuracy:.3f}; tokenizer ceilings {ceilings or 'none'}. "
    if n == 1:
        notes += "One seed: the paired intervals are not defined, so no comparison can pass. "
    failed = [name for name, ok in passed.items() if not ok]
    if failed and n > 1:
        notes += "Failed checks: " + ", ".join(failed) + ". "
    return notes.strip()


__all__ = ["METRICS", "SETTINGS", "Measurements", "checks", "comparisons", "gates", "paired", "verdict"]
