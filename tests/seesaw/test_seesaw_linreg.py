"""The noisy-linear-regression theory setting: exact recursion by hand and against Monte Carlo, Thm 1's equivalence."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26.seesaw import Seesaw, StepDecay
from iclr26.seesaw.linreg import (
    LinRegProblem,
    exact_risk,
    expected_sq_grad_norm,
    max_relative_gap,
    phase_plan,
    plan_from_seesaw,
    sgd_moment_step,
    simulate,
)


def small_problem() -> LinRegProblem:
    return LinRegProblem(lam=np.array([0.75, 0.25]), m0=np.array([1.0, 2.0]), noise_var=0.5)


def test_one_sgd_moment_step_by_hand() -> None:
    # λ = (0.75, 0.25), m = (1, 2), σ² = 0.5, η = 0.4, B = 2; Σ λ_j m_j = 1.25, η²/B = 0.08.
    # m_1' = (1 - 0.3)²·1 + 0.08 (0.5625·1 + 0.75·1.25 + 0.5·0.75) = 0.49 + 0.08·1.875 = 0.64
    # m_2' = (1 - 0.1)²·2 + 0.08 (0.0625·2 + 0.25·1.25 + 0.5·0.25) = 1.62 + 0.08·0.5625 = 1.665
    m = sgd_moment_step(small_problem(), np.array([1.0, 2.0]), 0.4, 2.0)
    assert m == pytest.approx([0.64, 1.665], rel=1e-14)


def test_expected_grad_norm_by_hand() -> None:
    # (1 + 1/2)(0.5625·1 + 0.0625·2) + (1·1.25 + 0.5·1)/2 = 1.03125 + 0.875 = 1.90625
    assert expected_sq_grad_norm(small_problem(), np.array([1.0, 2.0]), 2.0) == pytest.approx(1.90625, rel=1e-14)


def test_expected_grad_norm_against_sampling() -> None:
    # Monte Carlo over w* ~ N(0, diag(m)), x ~ N(0, H), ε ~ N(0, σ²) of ‖(1/B) Σ x (⟨x, e⟩ - ε)‖², B = 3.
    p = LinRegProblem(lam=np.array([0.5, 0.3, 0.2]), m0=np.array([1.0, 0.5, 2.0]), noise_var=0.7)
    g = torch.Generator().manual_seed(0)
    n, B = 400_000, 3
    e = torch.randn(n, 3, generator=g, dtype=torch.float64) * torch.tensor(p.m0).sqrt()
    x = torch.randn(n, B, 3, generator=g, dtype=torch.float64) * torch.tensor(p.lam).sqrt()
    eps = math.sqrt(p.noise_var) * torch.randn(n, B, generator=g, dtype=torch.float64)
    grad = torch.einsum("nbd,nb->nd", x, torch.einsum("nbd,nd->nb", x, e) - eps) / B
    mc = (grad**2).sum(1)
    expected = expected_sq_grad_norm(p, p.m0, B)
    assert float(mc.mean()) == pytest.approx(expected, abs=4 * float(mc.std()) / math.sqrt(n))


def test_monte_carlo_sgd_matches_the_exact_recursion() -> None:
    # 20 000 seeds: the seed-mean risk's standard error is ≈ 1%; allow 4%.
    p = LinRegProblem.power_law(8, exponent=1.0, noise_var=1.0)
    plan = phase_plan(eta0=0.5, batch0=2, lr_decay=2.0, batch_growth=1.0, n_phases=3, samples_per_phase=16)
    mc = simulate(p, plan, optimizer="sgd", n_seeds=20_000, generator=torch.Generator().manual_seed(1))
    exact = exact_risk(p, plan)
    assert mc.samples.tolist() == exact.samples.tolist()
    assert mc.risk == pytest.approx(exact.risk, rel=0.04)


def test_monte_carlo_adam_matches_a_per_seed_reference_loop() -> None:
    # Three Adam steps (β = (0.9, 0.95), ε = 1e-8) on 2 seeds, batch 3, D = 2, redone seed by seed in numpy from the
    # same draws (w* first, then per step x and ε). Step t:
    #   g = (1/B) Σ_b x_b (⟨x_b, w - w*⟩ - ε_b),  m ← β1 m + (1-β1) g,  v ← β2 v + (1-β2) g²,
    #   w ← w - η (m / (1 - β1^t)) / (√(v / (1 - β2^t)) + ε).
    # At t = 1 the bias-corrected step is η g / (|g| + ε), i.e. ≈ η per coordinate.
    p = small_problem()
    plan = phase_plan(eta0=0.1, batch0=3, lr_decay=1, batch_growth=1, n_phases=1, samples_per_phase=9)
    got = simulate(p, plan, optimizer="adam", n_seeds=2, generator=torch.Generator().manual_seed(5), betas=(0.9, 0.95))
    g = torch.Generator().manual_seed(5)
    w_star = (torch.randn(2, 2, generator=g, dtype=torch.float64) * torch.tensor(p.m0).sqrt()).numpy()
    draws = [
        (
            (torch.randn(2, 3, 2, generator=g, dtype=torch.float64) * torch.tensor(p.lam).sqrt()).numpy(),
            (math.sqrt(p.noise_var) * torch.randn(2, 3, generator=g, dtype=torch.float64)).numpy(),
        )
        for _ in range(3)
    ]
    want = [0.5 * float(np.mean([(w_star[s] ** 2) @ p.lam for s in range(2)]))]
    w, m, v = np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2))
    for t, (x, eps) in enumerate(draws, start=1):
        for s in range(2):
            grad = sum(x[s, b] * (x[s, b] @ (w[s] - w_star[s]) - eps[s, b]) for b in range(3)) / 3
            m[s] = 0.9 * m[s] + 0.1 * grad
            v[s] = 0.95 * v[s] + 0.05 * grad**2
            step = 0.1 * (m[s] / (1 - 0.9**t)) / (np.sqrt(v[s] / (1 - 0.95**t)) + 1e-8)
            if t == 1:
                assert step == pytest.approx(0.1 * grad / (np.abs(grad) + 1e-8), rel=1e-12)
            w[s] -= step
        want.append(0.5 * float(np.mean([((w[s] - w_star[s]) ** 2) @ p.lam for s in range(2)])))
    assert got.risk == pytest.approx(want, rel=1e-12)
    assert got.samples.tolist() == [0.0, 3.0, 6.0, 9.0] and got.steps == 3


def test_exact_risk_decreases_to_the_noise_floor_with_decay() -> None:
    # Bias decays, the variance term shrinks with the LR: the risk at phase ends decreases.
    p = LinRegProblem.power_law(16)
    curve = exact_risk(
        p, phase_plan(eta0=0.5, batch0=4, lr_decay=2, batch_growth=1, n_phases=4, samples_per_phase=1024)
    )
    assert not curve.diverged and np.all(np.diff(curve.phase_end_risk) < 0)
    assert curve.steps == 4 * 256


def test_thm1_sgd_decay_equals_ramp_and_nsgd_needs_the_sqrt_rule() -> None:
    # Thm 1: (a, β) = (2, 1) and (1, 2) have the same a·β; NSGD: (2, 1) and (√2, 2) have the same a·√β,
    # while the naive ramp (1, 2) does not.
    p = LinRegProblem.power_law(32)

    def run(a, b, eta, normalized):
        plan = phase_plan(eta0=eta, batch0=4, lr_decay=a, batch_growth=b, n_phases=4, samples_per_phase=2048)
        return exact_risk(p, plan, normalized=normalized)

    sgd_gap = max_relative_gap(run(1, 2, 0.5, False), run(2, 1, 0.5, False))
    decay = run(2, 1, 0.1, True)
    seesaw_gap = max_relative_gap(run(math.sqrt(2), 2, 0.1, True), decay)
    naive_gap = max_relative_gap(run(1, 2, 0.1, True), decay)
    assert sgd_gap < 0.05 and seesaw_gap < 0.05
    assert naive_gap > 3 * seesaw_gap and naive_gap > 0.05


def test_divergence_is_flagged() -> None:
    p = LinRegProblem.power_law(4)
    curve = exact_risk(
        p, phase_plan(eta0=50.0, batch0=1, lr_decay=2, batch_growth=1, n_phases=2, samples_per_phase=200)
    )
    assert curve.diverged and math.isinf(max_relative_gap(curve, curve))
    # The run stops at the first diverged phase; the phases after it are reported as ∞.
    assert math.isinf(curve.phase_end_risk[-1]) and len(curve.risk) < 1 + 400
    mc = simulate(
        p,
        phase_plan(eta0=50.0, batch0=1, lr_decay=2, batch_growth=1, n_phases=2, samples_per_phase=200),
        optimizer="sgd",
        n_seeds=2,
        generator=torch.Generator().manual_seed(0),
    )
    assert mc.diverged and np.all(np.isinf(mc.phase_end_risk))


def test_plan_from_seesaw_is_thm1s_phase_form() -> None:
    # Three even halvings over 4 × 512 samples, B0 = 4: Seesaw's phases are (0.3·√2^{-k}, 4·2^k), 512/B_k steps.
    s = Seesaw(peak_lr=0.3, base_batch_size=4, total_tokens=2048, base=StepDecay.even(3), max_batch_size=32)
    got = plan_from_seesaw(s)
    want = phase_plan(eta0=0.3, batch0=4, lr_decay=math.sqrt(2), batch_growth=2, n_phases=4, samples_per_phase=512)
    assert got.lr == pytest.approx(want.lr, rel=1e-12)
    assert got.batch.tolist() == want.batch.tolist() and got.steps.tolist() == [128, 64, 32, 16]


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="needs a schedule without warmup"):
        plan_from_seesaw(Seesaw(peak_lr=1.0, base_batch_size=4, total_tokens=100, warmup_tokens=10, max_batch_size=8))
    with pytest.raises(ValueError, match="not a whole number of batches"):
        plan_from_seesaw(
            Seesaw(peak_lr=1.0, base_batch_size=4, total_tokens=90, base=StepDecay.even(1), max_batch_size=8)
        )
    with pytest.raises(ValueError, match="phase_plan eta0 must be positive and finite"):
        phase_plan(eta0=math.nan, batch0=4, lr_decay=2, batch_growth=1, n_phases=3, samples_per_phase=64)
    with pytest.raises(ValueError, match="phase_plan n_phases must be >= 1"):
        phase_plan(eta0=1.0, batch0=4, lr_decay=2, batch_growth=1, n_phases=0, samples_per_phase=64)
    with pytest.raises(ValueError, match="samples_per_phase=8 is below the largest batch"):
        phase_plan(eta0=1.0, batch0=4, lr_decay=1, batch_growth=4, n_phases=3, samples_per_phase=8)
    with pytest.raises(ValueError, match="optimizer must be 'sgd' or 'adam'"):
        simulate(
            small_problem(),
            phase_plan(eta0=1, batch0=1, lr_decay=1, batch_growth=1, n_phases=1, samples_per_phase=1),
            optimizer="lion",
            n_seeds=1,
            generator=torch.Generator(),
        )
    one_step = phase_plan(eta0=1, batch0=1, lr_decay=1, batch_growth=1, n_phases=1, samples_per_phase=1)
    for kwargs, needle in (
        (dict(n_seeds=0), "n_seeds must be >= 1"),
        (dict(n_seeds=1, record_every=0), "record_every must be >= 1"),
        (dict(n_seeds=1, betas=(0.9, 1.0)), "betas must lie in"),
    ):
        with pytest.raises(ValueError, match=needle):
            simulate(small_problem(), one_step, optimizer="adam", generator=torch.Generator(), **kwargs)
    with pytest.raises(ValueError, match="lam must be positive"):
        LinRegProblem(lam=np.array([0.0, 1.0]), m0=np.ones(2), noise_var=1.0)
