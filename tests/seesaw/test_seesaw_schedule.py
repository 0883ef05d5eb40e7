"""The Seesaw schedule against hand-computed (lr, batch) sequences, its limiting cases and its error messages."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr26.common.lmtrain import BatchPlan, CosineSchedule
from iclr26.seesaw import CosineDecay, Seesaw, StepDecay, cut_count, lr_decay_per_cut

R2 = math.sqrt(2.0)


def step_base_schedule(**kw) -> Seesaw:
    """Peak 0.8, B0 = 4 samples, 1200 samples, LR halved at 400 and 800 samples (no warmup)."""
    args = dict(peak_lr=0.8, base_batch_size=4, total_tokens=1200, base=StepDecay((1 / 3, 2 / 3)), alpha=2.0)
    args.update(kw)
    return Seesaw(**args)


def runs(plan) -> list[tuple[float, int, int]]:
    """(lr, batch, number of consecutive steps) runs of a plan."""
    out: list[tuple[float, int, int]] = []
    for lr, b in zip(plan.lr, plan.batch_size, strict=True):
        if out and math.isclose(out[-1][0], lr, rel_tol=1e-12) and out[-1][1] == b:
            out[-1] = (out[-1][0], b, out[-1][2] + 1)
        else:
            out.append((float(lr), int(b), 1))
    return out


def assert_runs(actual, expected) -> None:
    assert len(actual) == len(expected), actual
    for (lr, b, n), (lr_e, b_e, n_e) in zip(actual, expected, strict=True):
        assert lr == pytest.approx(lr_e, rel=1e-12) and (b, n) == (b_e, n_e), (actual, expected)


def test_step_decay_base_seesaw_hand_computed() -> None:
    # Base: LR 0.8 on [0, 400), 0.4 on [400, 800), 0.2 on [800, 1200) at B0 = 4.
    # Seesaw (α = 2, β = 2, a = 2/√2 = √2): LR 0.8, 0.8/√2, 0.4 with batch 4, 8, 16;
    # steps 400/4 = 100, 400/8 = 50, 400/16 = 25.
    plan = step_base_schedule(max_batch_size=16).plan()
    assert_runs(runs(plan), [(0.8, 4, 100), (0.8 / R2, 8, 50), (0.4, 16, 25)])
    assert plan.tokens_before[100] == 400 and plan.tokens_before[150] == 800


def test_step_decay_sgd_rule_hand_computed() -> None:
    # SGD rule (a = α/β = 1): LR stays 0.8 while the batch doubles at each halving of the base.
    plan = step_base_schedule(rule="sgd", max_batch_size=16).plan()
    assert_runs(runs(plan), [(0.8, 4, 100), (0.8, 8, 50), (0.8, 16, 25)])


def test_cap_equal_to_base_batch_is_the_base_staircase() -> None:
    # max_batch_size = B0 allows no growth: every cut decays the LR by the full α = 2.
    plan = step_base_schedule(max_batch_size=4).plan()
    assert_runs(runs(plan), [(0.8, 4, 100), (0.4, 4, 100), (0.2, 4, 100)])


def test_cap_falls_back_to_lr_decay() -> None:
    # Three halvings at 1/4, 1/2, 3/4 of 1600 samples; cap 8 = B0·2 allows one growth.
    # k=0: (0.8, 4); k=1: ramp (0.8/√2, 8); k=2, 3: LR decay by 2 at batch 8: 0.4/√2, 0.2/√2.
    s = Seesaw(peak_lr=0.8, base_batch_size=4, total_tokens=1600, base=StepDecay((0.25, 0.5, 0.75)), max_batch_size=8)
    assert s.max_growths == 1
    assert_runs(runs(s.plan()), [(0.8, 4, 100), (0.8 / R2, 8, 50), (0.4 / R2, 8, 50), (0.2 / R2, 8, 50)])


def test_alpha_four_step_decay() -> None:
    # α = 4 (base LR quartered once at the middle): Seesaw halves the LR (√4) and quadruples the batch.
    s = Seesaw(
        peak_lr=1.0,
        base_batch_size=2,
        total_tokens=800,
        base=StepDecay((0.5,), factor=4.0),
        alpha=4.0,
        max_batch_size=8,
    )
    assert_runs(runs(s.plan()), [(1.0, 2, 200), (0.5, 8, 50)])


def test_cosine_base_seesaw_hand_computed() -> None:
    # Cosine to 0, no warmup, η₀ = 1, B0 = 4 samples, N = 1200, cap 8 (one growth). Cuts at
    # f(p) = (1 + cos πp)/2 = 2^{-j}  ⇔  p_j = arccos(2^{1-j} - 1)/π: p_1 = 1/2 (n = 600), p_2 = 2/3 (n = 800),
    # p_3 = arccos(-3/4)/π = 0.76995 (n = 923.94), p_4 = arccos(-7/8)/π = 0.83914 (n = 1006.97).
    # k=0 on [0, 600): LR 1, batch 4, 600/4 = 150 steps;
    # k=1 on [600, 800): Seesaw, LR 1/√2, batch 8, 200/8 = 25 steps;
    # k=2 past the cap, LR decay by 2: LR 1/(2√2), batch 8, steps starting 800, ..., 920 (16);
    # k=3: LR 1/(4√2), steps starting 928, ..., 1000 (10); the next starts at 1008 > 1006.97.
    s = Seesaw(peak_lr=1.0, base_batch_size=4, total_tokens=1200, base=CosineDecay(0.0), max_batch_size=8)
    plan = s.plan()
    assert_runs(runs(plan)[:4], [(1.0, 4, 150), (1 / R2, 8, 25), (0.5 / R2, 8, 16), (0.25 / R2, 8, 10)])
    # Every step against a reference loop that counts cuts by the closed-form p_j instead of log_2(1/f).
    p_cut = [math.acos(2.0 ** (1 - j) - 1) / math.pi for j in range(1, 40)]
    n, want = 0, []
    while n < 1200:
        k = sum(pj <= n / 1200 + 1e-12 for pj in p_cut)
        want.append((n, 2.0 ** -(k / 2) if k <= 1 else 2.0**-0.5 * 2.0 ** -(k - 1), 4 if k == 0 else 8))
        n += want[-1][2]
    assert plan.tokens_before.tolist() == [w[0] for w in want]
    assert plan.lr == pytest.approx([w[1] for w in want], rel=1e-12)
    assert plan.batch_size.tolist() == [w[2] for w in want]
    assert len(want) == 150 + 25 + 16 + 10 + (1200 - 1008) // 8


def test_cosine_phase_starts_closed_form() -> None:
    # Cosine to 0 after warmup w = 100 over N = 1100: f(p) = (1 + cos πp)/2 = 2^{-k}
    # ⇔ p_k = arccos(2^{1-k} - 1)/π: p_1 = 1/2, p_2 = 2/3, p_3 = arccos(-3/4)/π. Start = w + p (N - w).
    s = Seesaw(
        peak_lr=1.0, base_batch_size=8, total_tokens=1100, base=CosineDecay(0.0), warmup_tokens=100, max_batch_size=32
    )
    phases = s.phases()
    expected_p = [0.5, 2 / 3, math.acos(-0.75) / math.pi]
    for k, p in enumerate(expected_p, start=1):
        assert phases[k].index == k
        assert phases[k].start_tokens == pytest.approx(100 + 1000 * p, abs=1e-5)
    # (B, lr) per phase: 8·2^k up to the cap 32, then LR decay by 2: η = 2^{-k/2} for k ≤ 2, 2^{-1}·2^{-(k-2)} after.
    assert [p.batch_size for p in phases[:5]] == [8, 16, 32, 32, 32]
    assert [p.lr for p in phases[:5]] == pytest.approx([1.0, 1 / R2, 0.5, 0.25, 0.125], rel=1e-12)
    # Just before and after the first cut.
    assert s(0, 599) == BatchPlan(1.0, 8)
    assert s(7, 601).batch_size == 16 and s(7, 601).lr == pytest.approx(1 / R2)


def test_warmup_is_unchanged() -> None:
    s = Seesaw(peak_lr=2.0, base_batch_size=8, total_tokens=1000, warmup_tokens=100, max_batch_size=64)
    # η₀ (n + 1) / n_w at batch B0, whatever the ramp.
    for n in (0, 10, 99):
        assert s(0, n) == BatchPlan(2.0 * (n + 1) / 100, 8)


def test_smooth_with_no_growth_equals_the_common_cosine_schedule() -> None:
    # Limiting case: no batch growth and the base curve inside phases is exactly the trainer's CosineSchedule.
    kw = dict(peak_lr=3e-3, total_tokens=50_000, warmup_tokens=5_000)
    ref = CosineSchedule(batch_size=16, final_lr_frac=0.1, **kw)
    s = Seesaw(base_batch_size=16, base=CosineDecay(0.1), max_batch_size=16, smooth=True, **kw)
    for n in np.linspace(0, 50_000, 997).astype(int):
        assert s(0, int(n)).lr == pytest.approx(ref(0, int(n)).lr, rel=1e-12)
        assert s(0, int(n)).batch_size == 16


def test_smooth_seesaw_lifts_the_base_by_sqrt_alpha_per_growth() -> None:
    # smooth=True: η = η₀ f (α/a)^{k_ramp} with α/a = √2 for the Adam rule at β = 2.
    s = Seesaw(peak_lr=1.0, base_batch_size=4, total_tokens=1000, base=CosineDecay(0.1), max_batch_size=8, smooth=True)
    for n in (100, 450, 700, 900):
        f = CosineDecay(0.1)(n / 1000)
        k = cut_count(f, 2.0)
        assert s.lr(n) == pytest.approx(f * R2 ** min(k, 1), rel=1e-12)
        assert s.batch_size(n) == 4 * 2 ** min(k, 1)


@pytest.mark.parametrize("alpha", [1.5, 2.0, 4.0])
@pytest.mark.parametrize("beta_frac", [0.0, 0.5, 1.0])
def test_equivalence_invariants(alpha: float, beta_frac: float) -> None:
    # Thm 1 keeps a·β fixed (= α for the base (α, 1)); the NSGD extension keeps a·√β fixed.
    beta = alpha**beta_frac
    assert lr_decay_per_cut(alpha, beta, "sgd") * beta == pytest.approx(alpha)
    assert lr_decay_per_cut(alpha, beta, "adam") * math.sqrt(beta) == pytest.approx(alpha)
    # The paper's Seesaw (β = α): LR / √α per cut.
    assert lr_decay_per_cut(alpha, alpha, "adam") == pytest.approx(math.sqrt(alpha))


def test_rules_keep_the_noise_temperature_of_the_base_staircase() -> None:
    # SGD's noise scale is η/B, and normalised SGD's effective SGD LR is η√B, so its noise scale is η/√B.
    # Adam rule: η_k/√B_k = (η₀ 2^{-k/2}) / √(B₀ 2^k) = η₀ 2^{-k}/√B₀, the base staircase's η/√B at every step.
    # SGD rule: η_k/B_k = η₀ / (B₀ 2^k), the base staircase's η/B.
    kw = dict(peak_lr=1.0, base_batch_size=4, total_tokens=4000, base=CosineDecay(0.05), warmup_tokens=200)
    seesaw = Seesaw(max_batch_size=64, **kw)
    sgd = Seesaw(max_batch_size=64, rule="sgd", **kw)
    base = Seesaw(max_batch_size=4, **kw)
    assert seesaw.max_growths >= cut_count(0.05, 2.0)  # the cap is never reached
    grew = 0
    for n in range(200, 4000, 37):
        assert seesaw.lr(n) / math.sqrt(seesaw.batch_size(n)) == pytest.approx(base.lr(n) / 2.0, rel=1e-12)
        assert sgd.lr(n) / sgd.batch_size(n) == pytest.approx(base.lr(n) / 4.0, rel=1e-12)
        grew += seesaw.batch_size(n) > 4
    assert grew > 10


def test_plan_spends_exactly_the_budget_and_counts_fewer_steps() -> None:
    kw = dict(
        peak_lr=1.0,
        base_batch_size=4,
        total_tokens=10_000,
        base=CosineDecay(0.0),
        warmup_tokens=500,
        tokens_per_sample=5,
    )
    seesaw = Seesaw(max_batch_size=32, **kw)
    base = Seesaw(max_batch_size=4, **kw)
    for s in (seesaw, base):
        plan = s.plan()
        assert int((plan.batch_size * 5).sum()) == 10_000
        assert np.all(np.diff(plan.tokens_before) > 0)
    assert base.serial_steps() == 10_000 // 20
    # Serial steps = Σ over steps; in the continuum it is ∫ dn / (T B(n)): compare with a fine Riemann sum.
    n = np.arange(0, 10_000, 0.5)
    integral = float(np.sum(0.5 / (5 * np.array([seesaw.batch_size(x) for x in n]))))
    assert abs(seesaw.serial_steps() - integral) <= 4
    assert seesaw.serial_steps() < 0.8 * base.serial_steps()


def test_is_a_trainer_schedule() -> None:
    s = Seesaw(peak_lr=1e-3, base_batch_size=8, total_tokens=4096, max_batch_size=32, tokens_per_sample=16)
    plan = s(3, 0)
    assert isinstance(plan, BatchPlan) and plan == BatchPlan(1e-3, 8)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        (dict(alpha=1.0), "alpha must be > 1"),
        (dict(alpha=0.5), "alpha must be > 1"),
        (dict(batch_growth=0.5), "batch_growth must be finite and >= 1"),
        (dict(batch_growth=math.nan), "batch_growth must be finite and >= 1"),
        (dict(batch_growth=8.0, max_batch_size=64), "batch_growth=8.0 with rule='adam' would raise the LR"),
        (dict(batch_growth=4.0, rule="sgd", max_batch_size=64), "batch_growth <= 2"),
        (dict(max_batch_size=4), "max_batch_size=4 is below base_batch_size=8"),
        (dict(max_batch_size=100), "max_batch_size=100 is not on the ramp"),
        (dict(base_batch_size=3, batch_growth=1.5, max_batch_size=None, base=CosineDecay(0.3)), "fractional batch"),
        (dict(max_batch_size=None, base=CosineDecay(0.0)), "batch would grow without bound"),
        (dict(warmup_tokens=1000), "warmup_tokens must lie in"),
        (dict(peak_lr=-1.0), "peak_lr must be positive"),
        (dict(base_batch_size=0), "base_batch_size must be an int >= 1"),
        (dict(base_batch_size=True), "base_batch_size must be an int >= 1"),
        (dict(total_tokens=1000.0), "total_tokens must be an int >= 1"),
        (dict(total_tokens=math.nan), "total_tokens must be an int >= 1"),
        (dict(warmup_tokens=-1), "warmup_tokens must be an int >= 0"),
        (dict(tokens_per_sample=0), "tokens_per_sample must be an int >= 1"),
        (dict(max_batch_size=64.0), "max_batch_size must be an int >= 1"),
        (dict(peak_lr=math.nan), "peak_lr must be positive and finite"),
        (dict(rule="lamb"), "rule must be 'adam' or 'sgd'"),
        (dict(base=lambda p: 1.0 - p + (0.5 if p > 0.5 else 0.0)), "base decay must be non-increasing"),
        (dict(base=lambda p: 0.5), "base decay must start at f(0) = 1"),
        (dict(base=lambda p: 1.0 - 2 * p), "base decay must stay in [0, 1]"),
    ],
)
def test_bad_input_raises_naming_the_argument(kwargs, needle) -> None:
    args = dict(peak_lr=1.0, base_batch_size=8, total_tokens=1000, max_batch_size=64)
    args.update(kwargs)
    with pytest.raises(ValueError) as err:
        Seesaw(**args)
    assert needle in str(err.value), str(err.value)


def test_base_decay_validation() -> None:
    with pytest.raises(ValueError, match="milestones must be strictly increasing"):
        StepDecay((0.5, 0.25))
    with pytest.raises(ValueError, match="factor must be > 1"):
        StepDecay((0.5,), factor=1.0)
    with pytest.raises(ValueError, match="final_lr_frac must lie in"):
        CosineDecay(1.5)
    assert StepDecay.even(3).milestones == (0.25, 0.5, 0.75)


@pytest.mark.parametrize("bad", [-1, -0.5, math.nan, math.inf, "10", None, True])
def test_token_and_step_arguments_reject_negative_nan_and_non_numbers(bad) -> None:
    s = Seesaw(peak_lr=1.0, base_batch_size=8, total_tokens=1000, max_batch_size=64, warmup_tokens=100)
    for method in (s.lr, s.batch_size, s.cuts, s.progress, s.multiplier):
        with pytest.raises(ValueError, match=r"Seesaw tokens must be a finite number >= 0, got"):
            method(bad)
    with pytest.raises(ValueError, match=r"Seesaw step must be a finite number >= 0, got"):
        s(bad, 0)
    with pytest.raises(ValueError, match=r"Seesaw tokens_seen must be a finite number >= 0, got"):
        s(0, bad)


def test_warmup_at_a_negative_token_count_would_give_a_negative_lr() -> None:
    # Why negative counts are refused: the warmup formula η₀ (n + 1) / n_w gives -0.04 at n = -5, n_w = 100.
    s = Seesaw(peak_lr=1.0, base_batch_size=8, total_tokens=1000, max_batch_size=64, warmup_tokens=100)
    assert s.lr(0) == pytest.approx(0.01) and s.lr(99) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="tokens"):
        s.lr(-5)


def test_base_decays_reject_nan_progress_and_bad_cut_counts() -> None:
    with pytest.raises(ValueError, match=r"CosineDecay p must be a real number, not NaN, got nan"):
        CosineDecay(0.1)(math.nan)
    with pytest.raises(ValueError, match=r"StepDecay p must be a real number, not NaN, got nan"):
        StepDecay((0.5,))(math.nan)
    for bad in (0, -2, math.nan, 2.0):
        with pytest.raises(ValueError, match=r"StepDecay.even n_cuts must be an int >= 1, got"):
            StepDecay.even(bad)
    # Outside [0, 1] the progress is clipped (cosine) or counts every milestone (step), as before.
    assert CosineDecay(0.1)(-1.0) == 1.0 and CosineDecay(0.1)(2.0) == pytest.approx(0.1)
    assert StepDecay((0.5,))(2.0) == 0.5
