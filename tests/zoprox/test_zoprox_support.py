"""The oracle (counting, validation, backends), the metrics against closed forms, and the targets."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26.zoprox.metrics import gaussian_w2, knn_kl, mmd_rbf, mode_fractions, wasserstein2
from iclr26.zoprox.oracle import PotentialOracle
from iclr26.zoprox.sampler import sample
from iclr26.zoprox.targets import (
    DoubleWell,
    GaussianLassoMixture,
    LogisticPosterior,
    TwoTori,
    anisotropic_gaussian,
    gaussian_lasso_mixture,
    ring_mixture,
)

F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- oracle


def test_oracle_counts_evaluations_gradients_and_rounds():
    oracle = PotentialOracle(lambda x: x.square().sum(-1), chunk_size=3)
    x = torch.randn(7, 2, dtype=F64, generator=gen(0))
    torch.testing.assert_close(oracle(x), x.square().sum(-1))
    values, grads = oracle.value_and_grad(x)
    torch.testing.assert_close(grads, 2 * x)  # autograd of |x|^2
    oracle.grad(x[:2])
    assert (oracle.n_evals, oracle.n_grads, oracle.n_rounds) == (14, 9, 3)
    oracle.reset_counts()
    assert (oracle.n_evals, oracle.n_grads, oracle.n_rounds) == (0, 0, 0)


def test_numpy_backend_with_explicit_gradient():
    oracle = PotentialOracle(lambda x: np.sum(x**2, axis=1), grad_fn=lambda x: 2 * x, backend="numpy")
    x = torch.randn(4, 3, dtype=F64, generator=gen(1))
    values, grads = oracle.value_and_grad(x)
    assert values.dtype == F64
    torch.testing.assert_close(grads, 2 * x)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"backend": "jax"}, "backend"), ({"chunk_size": 0}, "chunk_size"), ({"grad_fn": 3}, "grad_fn")],
)
def test_oracle_rejects_bad_settings(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PotentialOracle(lambda x: x.sum(-1), **kwargs)


def test_oracle_rejects_non_callables_and_bad_points():
    with pytest.raises(ValueError, match="potential"):
        PotentialOracle(3.0)
    with pytest.raises(ValueError, match="x: expected"):
        PotentialOracle(lambda x: x.sum(-1))(torch.zeros(3))


def test_oracle_rejects_bad_gradients():
    oracle = PotentialOracle(lambda x: x.sum(-1), grad_fn=lambda x: x[:, :1])
    with pytest.raises(ValueError, match="grad_fn: expected gradients of shape"):
        oracle.value_and_grad(torch.zeros(2, 3))


def test_recorder_grid_is_aligned_on_the_last_iteration():
    # 5 iterations, every 2nd counted back from the last: 5, 3, 1, plus the initial state
    out = sample(lambda x: x.square().sum(-1), torch.zeros(2, 1), 5, 0.5, 2, record_every=2, generator=gen(40))
    assert out.snapshot_iters.tolist() == [0, 1, 3, 5]
    assert out.snapshot_evals.tolist() == [0, 1 * 40, 3 * 40, 5 * 40]  # T * N * M = 10 * 2 * 2 = 40 per iteration


# ---------------------------------------------------------------- metrics


def test_knn_kl_recovers_the_gaussian_kl():
    # KL(N(1, 1) || N(0, 1)) = 1/2 in d = 1 (and 0 for identical distributions); 4000 samples: error < 0.08
    p = 1.0 + torch.randn(4000, 1, dtype=F64, generator=gen(2))
    q = torch.randn(4000, 1, dtype=F64, generator=gen(3))
    assert abs(knn_kl(p, q) - 0.5) < 0.08
    assert abs(knn_kl(torch.randn(4000, 1, dtype=F64, generator=gen(4)), q)) < 0.08


def test_knn_kl_works_for_every_neighbour_rank_and_validates_k():
    # k = 1 once crashed (a plain cKDTree query with k=1 returns a 1-D array); KL(N(1, 1) || N(0, 1)) = 1/2 for all k
    p = 1.0 + torch.randn(4000, 1, dtype=F64, generator=gen(30))
    q = torch.randn(4000, 1, dtype=F64, generator=gen(31))
    for k in (1, 2, 4):
        assert abs(knn_kl(p, q, k=k) - 0.5) < 0.1, k
    # hand-computed, d = 1, k = 1: samples {0, 1, 3}, reference {0.5, 4}: rho = (1, 1, 2) (nearest other sample),
    # nu = (0.5, 0.5, 1) (nearest reference point); D = (1/3) sum log(nu / rho) + log(2 / 2) = (1/3) log(1/8)
    x = torch.tensor([[0.0], [1.0], [3.0]], dtype=F64)
    r = torch.tensor([[0.5], [4.0]], dtype=F64)
    assert knn_kl(x, r, k=1) == pytest.approx(math.log(1 / 8) / 3, rel=1e-12)
    with pytest.raises(ValueError, match="k: "):
        knn_kl(p, q, k=0)


def test_wasserstein2_is_exact_on_a_one_dimensional_example():
    # In 1-D the optimal plan matches sorted points: {0, 1} vs {2, 4} costs ((0-2)^2 + (1-4)^2)/2 = 6.5.
    a = torch.tensor([[1.0], [0.0]], dtype=F64)
    b = torch.tensor([[4.0], [2.0]], dtype=F64)
    assert wasserstein2(a, b) == pytest.approx(math.sqrt(6.5), rel=1e-12)


def test_gaussian_w2_closed_form():
    # 1-D: W2^2 = (m1 - m2)^2 + (s1 - s2)^2 = 1 + (2 - 1)^2 = 2; diagonal d = 2 adds per coordinate.
    w = gaussian_w2(
        torch.tensor([0.0, 0.0], dtype=F64),
        torch.diag(torch.tensor([4.0, 1.0], dtype=F64)),
        torch.tensor([1.0, 0.0], dtype=F64),
        torch.diag(torch.tensor([1.0, 9.0], dtype=F64)),
    )
    assert w == pytest.approx(math.sqrt(1 + 1 + 4), rel=1e-10)


def test_mmd_is_near_zero_for_equal_laws_and_positive_otherwise():
    a = torch.randn(500, 2, dtype=F64, generator=gen(5))
    b = torch.randn(500, 2, dtype=F64, generator=gen(6))
    assert abs(mmd_rbf(a, b, 1.0)) < 0.01
    assert mmd_rbf(a + 2.0, b, 1.0) > 0.2
    with pytest.raises(ValueError, match="bandwidth"):
        mmd_rbf(a, b, 0.0)


def test_mode_fractions_counts_nearest_modes():
    modes = torch.tensor([[0.0, 0.0], [10.0, 0.0]], dtype=F64)
    x = torch.tensor([[1.0, 0.0], [9.0, 1.0], [8.0, 0.0], [-3.0, 2.0]], dtype=F64)
    torch.testing.assert_close(mode_fractions(x, modes), torch.tensor([0.5, 0.5], dtype=F64))


# ---------------------------------------------------------------- targets


@pytest.mark.parametrize(
    "target",
    [
        anisotropic_gaussian(4, 10.0, gen(7)),
        ring_mixture(3, 4, 3.0, 0.5),
        DoubleWell(3, 2.0),
        gaussian_lasso_mixture(gen(8)),
        LogisticPosterior(
            torch.randn(20, 3, dtype=F64, generator=gen(9)),
            torch.sign(torch.randn(20, dtype=F64, generator=gen(10))),
            2.0,
        ),
    ],
    ids=["gaussian", "mixture", "double_well", "lasso", "logistic"],
)
def test_analytic_gradients_match_autograd(target):
    x = torch.randn(6, target.dim, dtype=F64, generator=gen(11)).requires_grad_(True)
    (auto,) = torch.autograd.grad(target.potential(x).sum(), x)
    torch.testing.assert_close(target.grad(x.detach()), auto, rtol=1e-9, atol=1e-9)


def test_gaussian_lasso_mixture_is_normalised_and_its_samples_match():
    # e^{-f} is a normalised density: E_{x ~ N(0, I)}[e^{-f(x)} / phi(x)] = 1 (importance sampling, 2e5 draws; the
    # density is concentrated, so allow 5%); the Laplace half of the samples has E|x_i| = b = 1/4.
    target = gaussian_lasso_mixture(gen(12))
    x = torch.randn(200_000, 5, dtype=F64, generator=gen(13))
    log_phi = -0.5 * x.square().sum(-1) - 2.5 * math.log(2 * math.pi)
    assert abs((-target.potential(x) - log_phi).exp().mean().item() - 1.0) < 0.05
    s = target.sample(100_000, gen(14))
    near_zero = s.abs().sum(-1) < s.sub(1).abs().sum(-1)  # crude component assignment
    assert abs(near_zero.double().mean().item() - 0.5) < 0.02
    assert isinstance(target, GaussianLassoMixture)


def test_double_well_samples_follow_the_density():
    # E[x1^2] under exp(-a (x1^2 - 1)^2) by quadrature against the inverse-CDF samples; x2 is standard normal.
    target = DoubleWell(2, 3.0)
    grid = np.linspace(-4, 4, 400_001)
    dens = np.exp(-3.0 * (grid**2 - 1) ** 2)
    m2 = float((grid**2 * dens).sum() / dens.sum())
    s = target.sample(100_000, gen(15))
    assert abs(s[:, 0].square().mean().item() - m2) < 0.01
    assert abs(s[:, 0].mean().item()) < 0.02 and abs(s[:, 1].var().item() - 1) < 0.02


def test_tori_membership_and_masses():
    tori = TwoTori()
    pts = torch.tensor([[0.0, 0.0, 0.0], [-10.0, 0.0, 0.0], [-16.0, 0.0, 0.5], [5.0, 5.0, 5.0]], dtype=F64)
    torch.testing.assert_close(tori.potential(pts), torch.tensor([0.0, 0.0, 0.0, 100.0], dtype=F64))
    assert tori.fractions(pts) == (0.25, 0.5)
    assert tori.t2_mass == pytest.approx(3 / 13)


# --- non-finite inputs are refused by name (a diverged sampler's output used to give W2 = 0.0 or NaN) ---------------


def _with_bad_row(value: float, n: int = 6, d: int = 2) -> torch.Tensor:
    x = torch.randn(n, d, dtype=F64, generator=gen(0))
    x[3, 1] = value
    return x


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_sample_metrics_refuse_non_finite_points_naming_the_argument(bad):
    good = torch.randn(8, 2, dtype=F64, generator=gen(1))
    msg = r"1 of 6 rows hold NaN or inf \(first: row 3\)"
    for fn in (wasserstein2, knn_kl, lambda a, b: mmd_rbf(a, b, 1.0)):
        with pytest.raises(ValueError, match=f"^samples: {msg}"):
            fn(_with_bad_row(bad), good)
        with pytest.raises(ValueError, match=f"^reference: {msg}"):
            fn(good, _with_bad_row(bad))
    with pytest.raises(ValueError, match=f"^samples: {msg}"):
        mode_fractions(_with_bad_row(bad), torch.zeros(2, 2, dtype=F64))
    with pytest.raises(ValueError, match="^modes: 1 of 6 rows hold NaN"):
        mode_fractions(good, _with_bad_row(bad))
    # NumPy input is checked the same way
    with pytest.raises(ValueError, match="^samples: 1 of 6 rows"):
        wasserstein2(_with_bad_row(bad).numpy(), good.numpy())


def test_wasserstein2_of_a_nan_sample_used_to_be_zero_and_is_now_refused():
    # POT's network simplex returns 0 for an all-NaN cost matrix; the check stops it before the solver
    with pytest.raises(ValueError, match="samples: 2 of 2 rows hold NaN"):
        wasserstein2(torch.full((2, 1), math.nan, dtype=F64), torch.tensor([[0.0], [1.0]], dtype=F64))
    with pytest.raises(ValueError, match="reference: dimension 2 differs from the samples' 1"):
        wasserstein2(torch.zeros(2, 1, dtype=F64), torch.zeros(2, 2, dtype=F64))


def test_gaussian_w2_and_mmd_refuse_bad_parameters():
    eye = torch.eye(2, dtype=F64)
    zero = torch.zeros(2, dtype=F64)
    with pytest.raises(ValueError, match="^cov1: holds NaN or inf"):
        gaussian_w2(zero, eye * math.nan, zero, eye)
    with pytest.raises(ValueError, match=r"^mean2: expected shape \(2,\)"):
        gaussian_w2(zero, eye, torch.zeros(3, dtype=F64), eye)
    x = torch.randn(5, 2, dtype=F64, generator=gen(2))
    with pytest.raises(ValueError, match="^bandwidth: must be a finite number > 0, got inf"):
        mmd_rbf(x, x, math.inf)


def test_oracle_refuses_non_finite_query_points():
    oracle = PotentialOracle(lambda x: (x**2).sum(1))
    with pytest.raises(ValueError, match="^x: query points hold NaN or inf"):
        oracle(torch.tensor([[0.0, math.nan]], dtype=F64))
    assert oracle.n_evals == 0  # nothing was counted
