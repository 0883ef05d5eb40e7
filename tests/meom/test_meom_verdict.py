"""The MEOM verdict through its public function, on synthetic per-seed accuracies: each part can flip it.

The numbers are chosen so that the paired differences are known by hand: a difference of (g + 0.0, + 0.2, − 0.2,
+ 0.1, − 0.1) pp over five seeds has mean g, sample sd sqrt(0.1 / 4) = 0.158114 and 95% paired-t half-width
t_{0.975, 4} · 0.158114 / √5 = 2.776445 · 0.070711 = 0.196324.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from iclr26.meom.config import MEOMConfig
from iclr26.meom.verdict import Measurements, verdict

CONFIG = MEOMConfig(timesteps=3)  # 5 seeds needed, 95% intervals, kd_gain_min 0, claim_tolerance 0
HALF_WIDTH = 2.776445105197793 * (0.1 / 4) ** 0.5 / 5**0.5
SPREAD = (0.0, 0.2, -0.2, 0.1, -0.1)
TWD = [80.0, 85.0, 86.0]


def arm(gain: float | list[float], n: int = 5) -> list[list[float]]:
    """TWD's accuracies plus ``gain`` pp (one value, or one per t) and the seed spread of the module docstring."""
    by_t = np.broadcast_to(np.asarray(gain, dtype=float), (3,))
    return [[a + g + e for a, g in zip(TWD, by_t, strict=True)] for e in SPREAD[:n]]


def measured(
    *,
    meom: float | list[float] = 1.0,
    ce: float = -2.0,
    w05: float = -0.5,
    tmpd: float = 1.0,
    soft: float = 0.0,
    n: int = 5,
) -> Measurements:
    """Every arm as TWD + a gain: by default MEOM +1 pp, CE −2 pp (KD helps), TWD at MEOM's KD weight −0.5 pp (the
    weaker TWD), TWD+TMPD +1 pp over a softened TWD at TWD's level (the control is beaten)."""
    return Measurements(
        truncated_acc={
            "ce": arm(ce, n),
            "twd": [list(TWD)] * n,
            "twd-w0.5": arm(w05, n),
            "twd-soft": arm(soft, n),
            "twd+tmpd": arm(tmpd, n),
            "meom": arm(meom, n),
        },
        teacher_acc=[89.0] * n,
    )


def test_held_when_meom_beats_twd_at_every_t_and_tmpd_beats_the_softened_teacher():
    v = verdict(measured(), CONFIG)
    assert v.status == "held" and v.failed_gates == ()
    assert v.evidence["twd_arm"] == "twd" and v.evidence["twd_kd_weight"] == 0.2
    gain = v.evidence["meom_minus_twd_by_t"]
    np.testing.assert_allclose(gain["mean"], [1.0] * 3, atol=1e-9)
    np.testing.assert_allclose(gain["ci_low"], [1.0 - HALF_WIDTH] * 3, rtol=1e-6)
    assert list(v.evidence["meom_beats_twd_by_t"]) == [True] * 3
    assert v.evidence["twd+tmpd_beats_twd-soft"]
    assert v.evidence["gates"]["distillation_helps"]["passed"]
    kd = v.evidence["gates"]["distillation_helps"]["twd_minus_ce_full_T"]
    assert kd["mean"] == pytest.approx(2.0) and kd["ci_low"] == pytest.approx(2.0 - HALF_WIDTH, rel=1e-6)
    assert set(v.evidence["thresholds"]) == {"min_seeds", "confidence", "kd_gain_min", "claim_tolerance"}


def test_meom_is_judged_against_the_stronger_twd():
    # TWD at MEOM's KD weight 0.5 is 1.5 pp above TWD at 0.2: MEOM's +1 pp over TWD(0.2) is then -0.5 pp against
    # the stronger TWD, not held; and the gate reads the stronger TWD too (TWD(0.5) - CE = 3.5 pp)
    v = verdict(measured(w05=1.5), CONFIG)
    assert v.evidence["twd_arm"] == "twd-w0.5" and v.evidence["twd_kd_weight"] == 0.5
    assert v.status == "not held"
    np.testing.assert_allclose(v.evidence["meom_minus_twd_by_t"]["mean"], [-0.5] * 3, atol=1e-9)
    assert v.evidence["gates"]["distillation_helps"]["twd_minus_ce_full_T"]["mean"] == pytest.approx(3.5)
    # TWD(0.5) 0.5 pp above TWD(0.2): MEOM is +0.5 ± 0.196 pp above the stronger, held
    v = verdict(measured(w05=0.5), CONFIG)
    assert v.evidence["twd_arm"] == "twd-w0.5" and v.status == "held"


def test_a_softened_teacher_as_good_as_tmpd_gives_not_held():
    # the control passes: the softened-teacher TWD gains as much as TWD+TMPD, so MEOM's gain over TWD is not shown
    # to be more than softening, although MEOM still beats TWD at every t
    v = verdict(measured(soft=1.0), CONFIG)
    assert v.status == "not held" and list(v.evidence["meom_beats_twd_by_t"]) == [True] * 3
    assert not v.evidence["twd+tmpd_beats_twd-soft"]
    assert "softening" in v.notes
    # a softened teacher only 0.5 pp below TWD+TMPD: the interval 0.5 ± 0.196 lies above 0, the control is beaten
    assert verdict(measured(soft=0.5), CONFIG).status == "held"


def test_the_control_is_required_in_the_measurements():
    full = measured()
    for missing in ("twd-soft", "twd+tmpd", "ce", "twd-w0.5"):
        acc = {a: x for a, x in full.truncated_acc.items() if a != missing}
        with pytest.raises(ValueError, match=re.escape(missing)):
            Measurements(truncated_acc=acc, teacher_acc=full.teacher_acc)
    with pytest.raises(ValueError, match="teacher_acc"):
        Measurements(truncated_acc=full.truncated_acc, teacher_acc=full.teacher_acc[:4])


def test_distillation_that_does_not_help_gives_inconclusive():
    # CE as good as TWD: the test bed leaves nothing for a distillation target to improve on
    v = verdict(measured(ce=0.0), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("distillation_helps",)
    assert "gate failed: distillation_helps" in v.measurement
    # CE 0.1 pp below TWD: the interval 0.1 ± 0.196 reaches 0, not shown either
    assert verdict(measured(ce=-0.1), CONFIG).failed_gates == ("distillation_helps",)
    # KD helps by 2 pp (interval [1.80, 2.20]) but the gate asks for more than 2 pp at the interval's lower end
    strict = dataclasses.replace(CONFIG, kd_gain_min=2.0)
    assert verdict(measured(), strict).failed_gates == ("distillation_helps",)


def test_too_few_seeds_give_inconclusive():
    v = verdict(measured(n=4), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("enough_seeds",)
    assert verdict(measured(n=4), dataclasses.replace(CONFIG, min_seeds=4)).status == "held"


def test_meom_must_beat_twd_at_every_t():
    v = verdict(measured(meom=[1.0, 0.1, 1.0]), CONFIG)  # +0.1 ± 0.196 at t = 2
    assert v.status == "not held" and list(v.evidence["meom_beats_twd_by_t"]) == [True, False, True]
    assert "t = 2" in v.notes
    # MEOM equal to TWD (the laziest method that could pass): not held
    assert verdict(measured(meom=0.0), CONFIG).status == "not held"
    # +1 pp does not clear a 1.5 pp bar
    v = verdict(measured(), dataclasses.replace(CONFIG, claim_tolerance=1.5))
    assert v.status == "not held" and v.evidence["thresholds"]["claim_tolerance"]["value"] == 1.5
