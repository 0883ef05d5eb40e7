"""The paired Student-t analysis over seeds: hand-computed values, the degenerate cases, and scipy's t-tests."""

import math

import numpy as np
import pytest
from scipy import stats

from iclr26.common.stats import margin_test, paired_t


def test_three_seeds_by_hand():
    # d = (1, 2, 3): mean 2, squared deviations 1 + 0 + 1 = 2, sd = sqrt(2 / 2) = 1, se = 1 / sqrt(3) = 0.577350.
    # Two-sided 95%: t_{0.975, 2} = 4.302653, half-width 4.302653 / sqrt(3) = 2.484138 -> [-0.484138, 4.484138].
    # One-sided 95%: t_{0.95, 2} = 2.919986, lower = 2 - 2.919986 / sqrt(3) = 2 - 1.685854 = 0.314146.
    # T = 2 / se = 2 sqrt(3) = 3.464102. With 2 dof the tail is closed-form, P(t_2 > T) = (1 - T / sqrt(T^2 + 2)) / 2
    # = (1 - 3.464102 / sqrt(14)) / 2 = (1 - 0.925820) / 2 = 0.037090, so the two-sided p is 0.074180.
    r = paired_t([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    assert r.n == 3 and r.wins == 3
    assert r.mean == 2.0 and r.sd == 1.0
    assert r.se == pytest.approx(0.577350, abs=1e-6)
    assert r.half_width == pytest.approx(2.484138, abs=1e-6)
    assert (r.ci_low, r.ci_high) == pytest.approx((-0.484138, 4.484138), abs=1e-6)
    assert r.lower == pytest.approx(0.314146, abs=1e-6)
    assert r.p_greater == pytest.approx(0.037090, abs=1e-6)
    assert r.p_two_sided == pytest.approx(0.074180, abs=1e-6)
    assert all(isinstance(v, float) for v in (r.mean, r.se, r.ci_low, r.lower, r.p_two_sided)) and type(r.wins) is int


def test_level_and_null_by_hand():
    # d = (1, 2, 3) again. 90% interval: t_{0.95, 2} = 2.919986 -> half-width 1.685854.
    # null 1: T = (2 - 1) / se = sqrt(3) = 1.732051, P(t_2 > T) = (1 - 1.732051 / sqrt(5)) / 2 = 0.112702.
    r = paired_t([1.0, 2.0, 3.0], level=0.90, null=1.0)
    assert r.half_width == pytest.approx(1.685854, abs=1e-6)
    assert r.p_greater == pytest.approx(0.112702, abs=1e-6)
    assert r.p_two_sided == pytest.approx(2 * 0.112702, abs=2e-6)
    # the interval and the lower bound do not depend on the null
    assert r.lower == paired_t([1.0, 2.0, 3.0]).lower


def test_one_seed_has_no_interval_and_no_evidence():
    r = paired_t([0.7], [0.2])
    assert r.n == 1 and r.mean == pytest.approx(0.5) and r.wins == 1
    assert r.sd == math.inf and r.se == math.inf and r.half_width == math.inf
    assert (r.ci_low, r.ci_high, r.lower) == (-math.inf, math.inf, -math.inf)
    assert r.p_two_sided == 1.0 and r.p_greater == 1.0
    exact = paired_t([0.5], moments="exact")
    assert exact.sd == math.inf and exact.p_greater == 1.0
    # element-wise, one seed: every entry the same
    grid = paired_t(np.ones((1, 3)))
    np.testing.assert_array_equal(grid.se, np.full(3, math.inf))
    np.testing.assert_array_equal(grid.p_two_sided, np.ones(3))


@pytest.mark.parametrize("moments", ["numpy", "exact"])
def test_zero_spread_is_defined_without_nan(moments):
    r = paired_t([0.5, 0.5, 0.5], moments=moments)
    assert r.sd == 0.0 and r.se == 0.0 and r.half_width == 0.0
    assert (r.ci_low, r.ci_high, r.lower) == (0.5, 0.5, 0.5)
    assert r.p_two_sided == 0.0 and r.p_greater == 0.0  # T = +inf
    at_null = paired_t([0.5, 0.5, 0.5], null=0.5, moments=moments)  # T = 0 / 0: no evidence
    assert at_null.p_two_sided == 1.0 and at_null.p_greater == 1.0
    below = paired_t([0.5, 0.5, 0.5], null=1.0, moments=moments)  # T = -inf
    assert below.p_two_sided == 0.0 and below.p_greater == 1.0


def test_matches_scipy_ttest_rel():
    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 12):
        a, b = rng.normal(0.3, 1.0, n), rng.normal(0.0, 1.0, n)
        r = paired_t(a, b, level=0.9)
        assert r.p_two_sided == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-10)
        assert r.p_greater == pytest.approx(stats.ttest_rel(a, b, alternative="greater").pvalue, rel=1e-10)
        ci = stats.ttest_rel(a, b).confidence_interval(confidence_level=0.9)
        assert (r.ci_low, r.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)
        # the one-sided bound is scipy's one-sided interval's low end
        one = stats.ttest_rel(a, b, alternative="greater").confidence_interval(confidence_level=0.95)
        assert r.lower == pytest.approx(one.low, rel=1e-10)
        shifted = paired_t(a, b, null=0.2)
        assert shifted.p_greater == pytest.approx(
            stats.ttest_1samp(a - b, 0.2, alternative="greater").pvalue, rel=1e-10
        )


def test_student_t_values_are_scipy_stats_t_bit_for_bit():
    # paired_t evaluates the t distribution through scipy.special; its numbers are scipy.stats.t's exactly
    rng = np.random.default_rng(3)
    for n in (2, 3, 7, 30):
        d = rng.normal(0.1, 1.0, (n, 6))
        r = paired_t(d, level=0.9, confidence=0.975, null=0.05)
        mean, se = d.mean(axis=0), d.std(axis=0, ddof=1) / np.sqrt(n)
        assert np.array_equal(r.half_width, stats.t.ppf(0.95, n - 1) * se)
        assert np.array_equal(r.lower, mean - stats.t.ppf(0.975, n - 1) * se)
        assert np.array_equal(r.p_two_sided, 2 * stats.t.sf(np.abs(mean - 0.05) / se, n - 1))
        assert np.array_equal(r.p_greater, stats.t.sf((mean - 0.05) / se, n - 1))
        one = paired_t(d[:, 0], moments="exact")
        assert one.p_greater == stats.t.sf(one.mean / one.se, n - 1)


def test_element_wise_over_trailing_axes_equals_one_column_at_a_time():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.2, 1.0, (5, 4, 3)), rng.normal(0.0, 1.0, (5, 4, 3))  # (S, ...)
    r = paired_t(a, b)
    np.testing.assert_allclose(r.p_two_sided, stats.ttest_rel(a, b, axis=0).pvalue, rtol=1e-10)
    for i, j in np.ndindex(4, 3):
        col = paired_t(a[:, i, j], b[:, i, j])
        assert (r.mean[i, j], r.se[i, j], r.ci_low[i, j], r.p_greater[i, j]) == (
            col.mean,
            col.se,
            col.ci_low,
            col.p_greater,
        )
        assert r.wins[i, j] == col.wins


def test_exact_and_numpy_moments_agree_and_pairs_equal_differences():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=9), rng.normal(size=9)
    fast, exact = paired_t(a, b), paired_t(a, b, moments="exact")
    assert exact.mean == pytest.approx(fast.mean, rel=1e-14) and exact.sd == pytest.approx(fast.sd, rel=1e-14)
    assert paired_t(a - b) == fast


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([],), {}, "at least one seed"),
        (([1.0, 2.0], [1.0]), {}, "same shape"),
        (([1.0, 2.0],), {"level": 1.0}, "level"),
        (([1.0, 2.0],), {"confidence": 0.0}, "confidence"),
        (([1.0, 2.0],), {"moments": "fast"}, "moments"),
        ((np.ones((2, 2)),), {"moments": "exact"}, "1-D"),
    ],
)
def test_errors_name_the_problem(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        paired_t(*args, **kwargs)


def test_margin_rule_by_hand():
    # d = (1, 2, 3): mean 2, one-sided 95% lower bound 0.314146 (above), upper 2 + 1.685854 = 3.685854, half-width
    # 2.484138. Improvement: margin 1.9 < 2 and 0.314 > 0 pass; margin 2 does not (the mean must exceed it).
    r = margin_test([1.0, 2.0, 3.0], margin=1.9, confidence=0.95)
    assert r.passes and r.mean == 2.0
    assert (r.lower_bound, r.upper_bound, r.ci95_halfwidth) == pytest.approx((0.314146, 3.685854, 2.484138), abs=1e-6)
    assert not margin_test([1.0, 2.0, 3.0], margin=2.0, confidence=0.95).passes
    # the sign must be established: d = (-1, 2, 5) has mean 2 > 1 but sd 3, lower 2 - 2.919986 * 3 / sqrt(3) < 0
    assert not margin_test([-1.0, 2.0, 5.0], margin=1.0, confidence=0.95).passes
    # non-inferiority: upper bound 3.685854 must lie below the margin
    assert margin_test([1.0, 2.0, 3.0], margin=3.7, confidence=0.95, kind="noninferior").passes
    assert not margin_test([1.0, 2.0, 3.0], margin=3.6, confidence=0.95, kind="noninferior").passes
    assert r.record() == {"per_seed": [1.0, 2.0, 3.0], "mean": 2.0, "lower_bound": r.lower_bound,
                          "upper_bound": r.upper_bound, "ci95_halfwidth": r.ci95_halfwidth, "passes": True}  # fmt: skip


def test_margin_rule_decides_nothing_on_one_seed_or_a_nan():
    for diffs in ([5.0], [1.0, math.nan]):
        r = margin_test(diffs, margin=0.0, confidence=0.95)
        assert not r.passes and r.lower_bound is None and r.upper_bound is None and r.ci95_halfwidth is None
    with pytest.raises(ValueError, match="kind"):
        margin_test([1.0, 2.0], margin=0.0, confidence=0.95, kind="better")
