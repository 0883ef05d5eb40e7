"""The MEOM verdict: MEOM beats TWD at full length and at every truncated timestep, and not by softening alone.

The rule (fixed before the runs; thresholds are config fields with sources), on the seed-paired truncated-inference
accuracies (percent) of the arms, at t = 1..T. "TWD" is the stronger (higher seed-mean accuracy at t = T) of TWD at
its repository's KD weight (``twd``) and at MEOM's (``twd-w0.5``), so that neither a weak TWD nor MEOM's larger KD
weight can make MEOM win:

- **gate** ``enough_seeds``: at least ``min_seeds`` seeds, so that a paired interval can exclude 0;
- **gate** ``distillation_helps``: TWD beats the CE-only student at full length (t = T): the two-sided
  ``confidence`` paired-t interval of TWD − CE lies above ``kd_gain_min``. Without it the test bed leaves nothing for
  a better distillation target to improve on;
- **claim**: at every t, the seed-mean paired gain MEOM − TWD exceeds ``claim_tolerance`` and its interval lies
  above 0;
- **control** (a softened teacher must not explain TMPD's gain): at full length the interval of TWD+TMPD − TWD-soft,
  the softened-teacher TWD whose targets have the masks' mean entropy (same KD weight), lies above 0.

Held when both gates pass, the claim holds at every t and the control is beaten; not held when the gates pass and the
claim or the control fails; inconclusive when a gate fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import PairedT, paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.meom.config import VERDICT_ARMS, MEOMConfig


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured, as plain numbers.

    Attributes:
        truncated_acc: arm -> per seed (seed order), the test accuracy in percent of the t-step cumulative average
            at t = 1..T; must hold ``ce``, ``twd``, ``twd-w0.5``, ``twd-soft``, ``twd+tmpd`` and ``meom``, every
            seed with T values.
        teacher_acc: the teacher's test accuracy in percent, per seed.
    """

    truncated_acc: dict[str, list[list[float]]]
    teacher_acc: list[float]

    def __post_init__(self) -> None:
        missing = [a for a in VERDICT_ARMS if a not in self.truncated_acc]
        if missing:
            raise ValueError(f"Measurements.truncated_acc: the verdict needs the arms {missing}")
        shapes = {arm: np.shape(v) for arm, v in self.truncated_acc.items()}
        if len(set(shapes.values())) != 1 or len(next(iter(shapes.values()))) != 2:
            raise ValueError(f"Measurements.truncated_acc: every arm needs (seeds, T) values, got {shapes}")
        if len(self.teacher_acc) != next(iter(shapes.values()))[0]:
            raise ValueError(f"Measurements.teacher_acc: one value per seed, got {len(self.teacher_acc)} for {shapes}")

    def acc(self, arm: str) -> np.ndarray:
        """The (seeds, T) accuracies of ``arm``."""
        return np.asarray(self.truncated_acc[arm], dtype=float)

    def stronger_twd(self) -> str:
        """``twd`` or ``twd-w0.5``, whichever has the higher seed-mean accuracy at t = T (``twd`` on a tie)."""
        return max(("twd", "twd-w0.5"), key=lambda arm: self.acc(arm)[:, -1].mean())


def interval(t: PairedT) -> dict[str, Any]:
    """A paired-t result as the record holds it (arrays over t, or scalars)."""
    return {"mean": t.mean, "ci_low": t.ci_low, "ci_high": t.ci_high, "wins": t.wins, "n_seeds": t.n}


def verdict(m: Measurements, config: MEOMConfig) -> Verdict:
    """The claim check (module docstring).

    Args:
        m: the per-seed truncated accuracies of the arms and the teacher's accuracy.
        config: ``min_seeds``, ``confidence``, ``kd_gain_min``, ``claim_tolerance``; ``twd_kd_weight`` and
            ``w_tmpd`` for the text.

    Returns:
        The :class:`~iclr26.common.verdict.Verdict`; its evidence holds the paired gains with their intervals (the
        claim at every t; the gate and the control at full length) and the thresholds with their sources.
    """
    level = config.confidence
    n = len(m.teacher_acc)
    twd = m.stronger_twd()
    gain = paired_t(m.acc("meom"), m.acc(twd), level=level)  # (T,) arrays
    beats = (np.asarray(gain.mean) > config.claim_tolerance) & (np.asarray(gain.ci_low) > 0)
    kd = paired_t(m.acc(twd)[:, -1], m.acc("ce")[:, -1], level=level)
    control = paired_t(m.acc("twd+tmpd")[:, -1], m.acc("twd-soft")[:, -1], level=level)
    control_beaten = bool(control.ci_low > 0)
    gates = [
        Gate("enough_seeds", n >= config.min_seeds, {"n_seeds": n, "min_seeds": config.min_seeds}),
        Gate(
            "distillation_helps",
            kd.ci_low > config.kd_gain_min,
            {"twd_minus_ce_full_T": interval(kd), "kd_gain_min": config.kd_gain_min},
        ),
    ]
    evidence = {
        "twd_arm": twd,
        "twd_kd_weight": config.twd_kd_weight if twd == "twd" else config.w_tmpd,
        "meom_minus_twd_by_t": interval(gain),
        "meom_beats_twd_by_t": beats,
        "twd+tmpd_minus_twd-soft_full_T": interval(control),
        "twd+tmpd_beats_twd-soft": control_beaten,
        "acc_full_T": {arm: float(m.acc(arm)[:, -1].mean()) for arm in m.truncated_acc},
        "teacher_acc": float(np.mean(m.teacher_acc)),
        "thresholds": {
            name: threshold(config, name) for name in ("min_seeds", "confidence", "kd_gain_min", "claim_tolerance")
        },
    }
    return Verdict.decide(
        gates,
        held=bool(np.all(beats)) and control_beaten,
        evidence=evidence,
        measurement=_measurement(m, evidence["twd_kd_weight"], gain, kd, control, level=level),
        notes=_notes(beats, control_beaten),
    )


def _measurement(
    m: Measurements, kd_weight: float, gain: PairedT, kd: PairedT, control: PairedT, *, level: float
) -> str:
    """The report's one line: accuracies at full length, the gain by t, the gate's and the control's intervals."""
    acc = {arm: m.acc(arm)[:, -1].mean() for arm in ("meom", m.stronger_twd(), "ce")}
    pct = f"{100 * level:g}%"
    return (
        f"T={len(gain.mean)}, {gain.n} seed(s): MEOM {acc['meom']:.2f}% vs TWD (KD weight {kd_weight:g}, the "
        f"stronger) {acc[m.stronger_twd()]:.2f}% vs CE {acc['ce']:.2f}% at full T; MEOM - TWD by t = "
        + ", ".join(f"{g:+.2f}" for g in gain.mean)
        + f" pp (interval above 0 at {int(np.sum(np.asarray(gain.ci_low) > 0))}/{len(gain.mean)} t, paired t {pct})"
        + f"; TWD - CE {kd.mean:+.2f} pp [{kd.ci_low:+.2f}, {kd.ci_high:+.2f}]"
        + f"; control TWD+TMPD - softened TWD {control.mean:+.2f} pp [{control.ci_low:+.2f}, {control.ci_high:+.2f}]"
        + f"; teacher {np.mean(m.teacher_acc):.1f}%"
    )


def _notes(beats: np.ndarray, control_beaten: bool) -> str:
    """Which part of the rule failed, in words."""
    notes = (
        "Gains are seed-paired (shared init, batch order and masks); the claim needs the paired interval of MEOM - "
        f"TWD (the stronger KD weight) above 0 at every t = 1..{len(beats)} and TWD+TMPD above the softened-teacher "
        "TWD at full length. "
    )
    not_beaten = ", ".join(str(t + 1) for t in np.flatnonzero(~beats))
    if not_beaten:
        notes += f"MEOM does not beat TWD at t = {not_beaten}. "
    if not control_beaten:
        notes += "TWD+TMPD does not beat a teacher softened to the masks' entropy: TMPD's gain is not shown to be more "
        notes += "than softening. "
    return notes + "Var@T definition of the paper unknown; three candidates are in the metrics."
