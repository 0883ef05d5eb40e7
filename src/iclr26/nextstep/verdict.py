"""The verdict of the NextStep-1 reproduction, a pure function of per-seed sample metrics.

With guidance on: FM beats regression and VQ on the Fréchet distance and on faithfulness (each paired over seeds,
the ``ci_level`` Student-t interval of the mean difference above 0); guidance raises FM's faithfulness (same test);
FM's guided faithfulness reaches ``min_faithfulness``; and the control ``fm_shuffled`` (labels permuted across
images) stays below ``min_faithfulness``. Every arm must have run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Verdict
from iclr26.nextstep.config import BASELINES, NextStepConfig

SETTINGS = ("no_cfg", "cfg")
METRICS = ("faithfulness", "fd", "diversity")


@dataclass(frozen=True)
class Measurements:
    """Per-seed sample metrics of every arm that ran (seed k is entry k of every list).

    Attributes:
        samples: arm -> setting (``no_cfg``, ``cfg``) -> metric (``faithfulness``, ``fd``, ``diversity``) -> per seed.
        judge_accuracy: the judge's accuracy on held-out real images.
    """

    samples: Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]]
    judge_accuracy: float

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


def verdict(m: Measurements, config: NextStepConfig) -> Verdict:
    """Held when every check passes, the control fails the faithfulness bar and every arm ran (module docstring)."""
    level = config.ci_level
    comps = comparisons(m, "cfg", level=level)
    comps["faith_fm_cfg_minus_no_cfg"] = paired(
        m.series("fm", "cfg", "faithfulness"), m.series("fm", "no_cfg", "faithfulness"), level=level
    )
    fm_faith = m.mean("fm", "cfg", "faithfulness")
    checks = {name: bool(c["above_zero"]) for name, c in comps.items()}
    checks["fm_reaches_min_faithfulness"] = fm_faith >= config.min_faithfulness
    missing = [a for a in ("reg", "vq", "fm_shuffled") if a not in m.samples]
    control = m.mean("fm_shuffled", "cfg", "faithfulness") if "fm_shuffled" in m.samples else None
    control_fails = control is not None and control < config.min_faithfulness
    held = bool(not missing and all(checks.values()) and control_fails)
    evidence = {
        "comparisons_cfg_on": comps,
        "checks": checks,
        "fm_faithfulness_cfg": fm_faith,
        "control_fm_shuffled_faithfulness_cfg": control,
        "control_fails_bar": control_fails,
        "arms_missing": missing,
        "n_seeds": len(m.series("fm", "cfg", "fd")),
        "test": f"paired Student-t over seeds, {level:.0%} interval of the mean difference must lie above 0",
        "thresholds": {name: threshold(config, name) for name in ("min_faithfulness", "ci_level", "cfg_scale")},
    }
    return Verdict.decide([], held=held, evidence=evidence, measurement=_measurement(m, config), notes=_notes(
        m, checks, missing, control, control_fails))  # fmt: skip


def _measurement(m: Measurements, config: NextStepConfig) -> str:
    parts = [
        f"{arm}: faith {m.mean(arm, 'no_cfg', 'faithfulness'):.2f}->{m.mean(arm, 'cfg', 'faithfulness'):.2f}, "
        f"FD {m.mean(arm, 'cfg', 'fd'):.1f}"
        for arm in m.samples
    ]
    n = len(m.series("fm", "cfg", "fd"))
    return f"{n} seed{'s' if n > 1 else ''}, guided w={config.cfg_scale:g}: " + "; ".join(parts)


def _notes(m: Measurements, checks: dict[str, bool], missing: list[str], control, control_fails: bool) -> str:  # noqa: ANN001
    n = len(m.series("fm", "cfg", "fd"))
    notes = f"Judge accuracy on held-out real images {m.judge_accuracy:.3f}. "
    if n == 1:
        notes += "One seed: the paired intervals are not defined, so no comparison can pass. "
    if missing:
        notes += f"Arms {missing} not run: the verdict needs them. "
    failed = [name for name, ok in checks.items() if not ok]
    if failed and n > 1:
        notes += "Failed checks: " + ", ".join(failed) + ". "
    if control is not None and not control_fails:
        notes += "The shuffled-label control passed the faithfulness bar: the judge cannot tell prompts apart. "
    return notes.strip()


__all__ = ["METRICS", "SETTINGS", "Measurements", "comparisons", "paired", "verdict"]
