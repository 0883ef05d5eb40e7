"""The baselines: stationary moments on Gaussians, ULA's closed-form bias, exact rejection steps, costs, errors."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.zoprox.baselines import (
    in_and_out,
    liang_chen_log_accept,
    mala,
    proximal_rgo,
    random_walk_metropolis,
    ula,
)
from iclr26.zoprox.oracle import PotentialOracle

F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# N(mu, diag(var)) in d = 2
MU = torch.tensor([1.0, -1.0], dtype=F64)
VAR = torch.tensor([1.0, 0.25], dtype=F64)


def f_gauss(x: torch.Tensor) -> torch.Tensor:
    return ((x - MU).square() / (2 * VAR)).sum(-1)


def exact(n: int, seed: int) -> torch.Tensor:
    return MU + VAR.sqrt() * torch.randn(n, 2, dtype=F64, generator=gen(seed))


def assert_moments(x: torch.Tensor, mean_tol: float, var_rtol: float) -> None:
    torch.testing.assert_close(x.mean(0), MU, rtol=0, atol=mean_tol)
    torch.testing.assert_close(x.var(0), VAR, rtol=var_rtol, atol=0)


# 4000 chains started at exact samples: the mean has a standard error of sqrt(1/4000) = 0.016 (largest variance),
# the variance a relative standard error of sqrt(2/4000) = 2.2%; tolerances are about 4 standard errors.


def test_mala_keeps_the_gaussian_invariant():
    out = mala(f_gauss, exact(4000, 0), 50, 0.1, generator=gen(1))
    assert_moments(out.samples, 0.07, 0.1)
    assert 0.3 < out.diagnostics["acceptance"].mean() < 1.0


def test_rwm_keeps_the_gaussian_invariant_and_counts_one_evaluation_per_step():
    oracle = PotentialOracle(f_gauss)
    out = random_walk_metropolis(oracle, exact(4000, 2), 50, 0.8, generator=gen(3))
    assert_moments(out.samples, 0.07, 0.1)
    assert out.n_evals == 4000 * 51 and out.n_grads == 0  # one initial evaluation, then one per step


def test_ula_matches_its_closed_form_stationary_variance():
    # f = x^2 / (2 s2): x' = (1 - eta/s2) x + sqrt(2 eta) xi has stationary variance 2 eta / (1 - (1 - eta/s2)^2)
    # = s2 / (1 - eta / (2 s2)). With s2 = 1, eta = 0.5: 4/3 (a 33% bias that MALA removes).
    out = ula(
        lambda x: 0.5 * x.square().sum(-1),
        torch.randn(20_000, 1, dtype=F64, generator=gen(4)),
        60,
        0.5,
        generator=gen(5),
    )
    assert abs(out.samples.var().item() - 4 / 3) < 0.06
    assert out.n_grads == 20_000 * 60 and out.n_evals == 0


def test_in_and_out_is_an_exact_proximal_step_for_a_gaussian():
    # f = |x|^2 / 2 >= 0 = f_lower, so accepting N(y, hI) proposals with probability exp(-f) draws pi_{X|Y=y}
    # exactly; N(0, I) must stay invariant (2000 chains: mean s.e. 0.022, variance relative s.e. 3.2%). A chain
    # whose y lies far in the tail accepts with probability (2/3) exp(-|y|^2 / 3) per proposal and can exhaust the
    # 1000 trials (it then keeps its state): rare, well under 0.5% of the 20000 steps.
    oracle = PotentialOracle(lambda x: 0.5 * x.square().sum(-1))
    out = in_and_out(oracle, torch.randn(2000, 2, dtype=F64, generator=gen(6)), 10, 0.5, generator=gen(7))
    torch.testing.assert_close(out.samples.mean(0), torch.zeros(2, dtype=F64), rtol=0, atol=0.09)
    torch.testing.assert_close(out.samples.var(0), torch.ones(2, dtype=F64), rtol=0.13, atol=0)
    assert out.n_evals == oracle.n_evals == int(out.diagnostics["trials_mean"].sum() * 2000)
    assert out.diagnostics["failures"].sum() < 0.005 * 20_000


def test_in_and_out_keeps_the_uniform_distribution_on_a_box():
    # Membership potential of [-1, 1]^2 (0 inside, 100 outside): uniform has mean 0 and variance 1/3.
    def box(x):
        return torch.where((x.abs() <= 1).all(-1), 0.0, 100.0).to(x.dtype)

    x0 = 2 * torch.rand(2000, 2, dtype=F64, generator=gen(8)) - 1
    out = in_and_out(box, x0, 5, 0.3, generator=gen(9))
    assert (out.samples.abs() <= 1).all()
    # 2000 chains: mean s.e. 0.013, variance relative s.e. ~2%
    torch.testing.assert_close(out.samples.mean(0), torch.zeros(2, dtype=F64), rtol=0, atol=0.055)
    torch.testing.assert_close(out.samples.var(0), torch.full((2,), 1 / 3, dtype=F64), rtol=0.1, atol=0)


@pytest.mark.parametrize("f_lower", [1.0, float("inf"), float("nan")])
def test_in_and_out_rejects_a_wrong_lower_bound(f_lower):
    with pytest.raises(ValueError, match="f_lower"):
        in_and_out(f_gauss, exact(10, 10), 1, 0.5, f_lower=f_lower, generator=gen(11))


def test_liang_chen_acceptance_is_one_for_a_linear_potential():
    # f(x) = <a, x> is its own first-order model, so with M = 0 the log acceptance
    # -f(X) + f(w) + <g, X - w> = -<a, X> + <a, w> + <a, X - w> = 0 for every proposal.
    a = torch.tensor([0.3, -2.0], dtype=F64)
    w = torch.randn(5, 2, dtype=F64, generator=gen(12))
    prop = torch.randn(5, 2, dtype=F64, generator=gen(13))
    log_acc = liang_chen_log_accept(w, w @ a, a.expand(5, 2), 0.0)(torch.arange(5), prop, prop @ a)
    torch.testing.assert_close(log_acc, torch.zeros(5, dtype=F64), rtol=0, atol=1e-12)


def test_proximal_rgo_keeps_the_gaussian_invariant():
    # A convex quadratic with M = 1/min(var) = 4 >= its curvature: the lower bound holds and the RGO is exact.
    oracle = PotentialOracle(f_gauss)
    out = proximal_rgo(oracle, exact(4000, 14), 20, 0.1, weak_convexity=4.0, generator=gen(15))
    assert_moments(out.samples, 0.07, 0.1)
    assert out.n_grads == 20 * 4000 * 11  # 10 inner gradient steps + the first-order query at w, per chain
    assert out.n_evals == 20 * 4000 + int(out.diagnostics["trials_mean"].sum() * 4000)


def test_rejection_samplers_stop_at_the_query_budget():
    out = proximal_rgo(f_gauss, exact(50, 16), 1000, 0.1, weak_convexity=4.0, max_queries=5000, generator=gen(17))
    assert out.n_evals + out.n_grads >= 5000
    assert out.n_iters < 1000 and out.snapshot_iters[-1] == out.n_iters


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"step_size": 0.5}, "step_size"),
        ({"weak_convexity": -1.0}, "weak_convexity"),
        ({"weak_convexity": float("nan")}, "weak_convexity"),
        ({"step_size": float("inf"), "weak_convexity": 0.0}, "step_size"),
        ({"inner_steps": -1}, "inner_steps"),
    ],
)
def test_proximal_rgo_validates_its_arguments(kwargs, name):
    args = {"step_size": 0.1, "weak_convexity": 4.0} | kwargs
    with pytest.raises(ValueError, match=name):
        proximal_rgo(f_gauss, exact(5, 18), 1, **args)


def test_first_order_samplers_need_a_gradient_for_numpy_potentials():
    oracle = PotentialOracle(lambda x: 0.5 * (x**2).sum(-1), backend="numpy")
    with pytest.raises(ValueError, match="grad_fn"):
        mala(oracle, torch.zeros(3, 2), 1, 0.1)


def test_rwm_and_mala_validate_step_sizes():
    with pytest.raises(ValueError, match="proposal_std"):
        random_walk_metropolis(f_gauss, exact(3, 19), 1, 0.0)
    with pytest.raises(ValueError, match="step_size"):
        mala(f_gauss, exact(3, 20), 1, -0.1)
    assert math.isfinite(float(ula(f_gauss, exact(3, 21), 1, 0.1).samples.sum()))
