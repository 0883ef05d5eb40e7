"""The DNA verdict through its public function, on synthetic per-statement numbers: each part can flip it.

Twenty statements of lengths 2..5 (five each, training length <= 4). The paired differences are 0/1, so the gains
and their lower bounds are known by hand: d with k ones among n has mean k/n and sd sqrt(k(n−k)/(n(n−1))).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from iclr26.dna.config import DNAConfig
from iclr26.dna.verdict import Measurements, compare, trend, verdict

CONFIG = DNAConfig.preset("smoke")  # gain_margin 0, confidence 0.95, min_competence 0.2, library 0.5, direct 0.9
N = 20
LENGTHS = [2 + i % 4 for i in range(N)]


def hits(k: int) -> list[bool]:
    """The first ``k`` statements correct."""
    return [i < k for i in range(N)]


def measured(*, dna: int = 12, direct: int = 2, decompose: int = 6, placebo: int = 3, abstract: int = 3,
             library: tuple[int, int] = (9, 10)) -> Measurements:  # fmt: skip
    return Measurements(
        correct={"direct": hits(direct), "abstract": hits(abstract), "decompose": hits(decompose), "dna": hits(dna),
                 "dna_placebo": hits(placebo)},
        lengths=LENGTHS, library_correct=library[0], library_size=library[1],
    )  # fmt: skip


def test_held_when_dna_beats_direct_decomposition_and_the_placebo_library():
    v = verdict(measured(), CONFIG)
    assert v.status == "held" and v.failed_gates == ()
    # DNA − decompose: 6 ones in 20, mean 0.3, sd sqrt(6·14/(20·19)), lower bound 0.3 − t_{.95,19}·sd/√20
    sd = (6 * 14 / (20 * 19)) ** 0.5
    got = v.evidence["dna_vs_decompose"]
    assert got["mean"] == pytest.approx(0.3) and got["lower_bound"] == pytest.approx(
        0.3 - stats.t.ppf(0.95, 19) * sd / N**0.5
    )
    assert v.evidence["control_fails"] is True
    assert set(v.evidence["gates"]) == {"translator_competent", "library_learned", "direct_not_saturated"}


def test_a_placebo_library_that_reaches_dna_gives_not_held_and_flipping_it_back_gives_held():
    # The control: with the placebo library as good as the learned one, the gain is decomposition's or the names'.
    v = verdict(measured(placebo=12), CONFIG)
    assert v.status == "not held" and v.evidence["control_fails"] is False
    assert v.evidence["dna_vs_direct"]["passes"] and v.evidence["dna_vs_decompose"]["passes"]
    assert verdict(measured(placebo=2), CONFIG).status == "held"


def test_dna_no_better_than_decomposition_alone_is_not_held():
    v = verdict(measured(decompose=12), CONFIG)
    assert v.status == "not held" and not v.evidence["dna_vs_decompose"]["passes"]
    assert v.evidence["dna_vs_direct"]["passes"]


def test_dna_no_better_than_direct_is_not_held():
    v = verdict(measured(dna=2, decompose=1, placebo=1), CONFIG)
    assert v.status == "not held" and not v.evidence["dna_vs_direct"]["passes"]


@pytest.mark.parametrize(
    ("kwargs", "gate"),
    [
        ({"dna": 0, "direct": 0, "decompose": 0, "placebo": 0, "abstract": 0}, "translator_competent"),
        ({"library": (2, 10)}, "library_learned"),
        ({"library": (0, 0)}, "library_learned"),
        ({"dna": 20, "direct": 19, "decompose": 19, "placebo": 19, "abstract": 19}, "direct_not_saturated"),
    ],
)
def test_a_failed_gate_gives_inconclusive(kwargs, gate):
    v = verdict(measured(**kwargs), CONFIG)
    assert v.status == "inconclusive" and gate in v.failed_gates
    assert gate in v.measurement.split("gate failed:")[1]


def test_the_gate_thresholds_are_config_fields():
    # 2 of 20 direct, best arm at training length 9/15 = 0.6 (DNA): below a bar of 0.9 the gate fails.
    strict = dataclasses.replace(CONFIG, min_competence=0.9)
    assert verdict(measured(), strict).failed_gates == ("translator_competent",)
    assert verdict(measured(), CONFIG).evidence["thresholds"]["min_competence"]["value"] == 0.2


def test_the_length_trend_is_reported_not_judged():
    # DNA right on every statement of 2-3 clauses and on none longer: the gain over direct falls with length (a
    # slope whose lower bound is below 0), and the claim still holds, since the paper claims no trend.
    short = [n <= 3 for n in LENGTHS]
    m = Measurements(correct={"dna": short, **{a: hits(2) for a in ("direct", "abstract", "decompose", "dna_placebo")}},
                     lengths=LENGTHS, library_correct=9, library_size=10)  # fmt: skip
    v = verdict(m, CONFIG)
    assert v.status == "held"
    got = v.evidence["gain_over_direct_by_length"]
    d = [float(a) - float(b) for a, b in zip(short, hits(2), strict=True)]
    assert got["slope"] == pytest.approx(float(np.polyfit(LENGTHS, d, 1)[0]), abs=1e-12) and got["slope"] < 0
    assert got["slope_lower_bound"] < got["slope"] < 0


def test_compare_and_trend_hand_computed():
    # d = [0, 0, 1, 1]: mean 0.5, sd = sqrt(1/3), se = sd / 2; lower = 0.5 − t_{.95,3} · se
    got = compare([False, True, True, True], [False, True, False, False], margin=0.0, confidence=0.95)
    se = (1 / 3) ** 0.5 / 2
    assert got.mean == pytest.approx(0.5) and got.lower_bound == pytest.approx(0.5 - stats.t.ppf(0.95, 3) * se)
    assert not got.passes
    # OLS of d on length: slope = Sxy / Sxx = 2 / 5; residuals (.1, −.3, .3, −.1), s² = 0.2 / 2, stderr = √(s²/5)
    t = trend([False, True, True, True], [False, True, False, False], [2, 3, 4, 5], confidence=0.95)
    assert t["slope"] == pytest.approx(0.4)
    assert t["slope_lower_bound"] == pytest.approx(0.4 - stats.t.ppf(0.95, 2) * (0.1 / 5) ** 0.5)
    strong = compare([True] * 8 + [False] * 2, [False] * 10, margin=0.0, confidence=0.95)
    assert strong.passes and strong.mean == pytest.approx(0.8)
    assert trend([False] * 4, [False] * 4, [2, 3, 4, 5], confidence=0.95) == {"slope": 0.0, "slope_lower_bound": 0.0}


def test_measurements_name_what_is_missing():
    with pytest.raises(ValueError, match="lacks the arms"):
        Measurements({"dna": [True]}, [2], 1, 1)
    with pytest.raises(ValueError, match="one value per test statement"):
        Measurements({a: [True] for a in ("direct", "abstract", "decompose", "dna", "dna_placebo")}, [2, 3], 1, 1)
