"""The O(n·m) squared distances of the sampler: float64 reference, float32, chunking, memory, and float32 runs."""

from __future__ import annotations

import math

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from iclr26.zoprox.estimator import log_inverse_weights, posterior_logits, squared_distances
from iclr26.zoprox.sampler import sample
from iclr26.zoprox.studies import lasso_study, tori_study
from iclr26.zoprox.targets import TwoTori, gaussian_lasso_mixture

F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """‖a_i − b_j‖² by explicit differences in float64 (the definition)."""
    a, b = a.to(F64), b.to(F64)
    return (a[:, None, :] - b[None, :, :]).square().sum(-1)


def test_hand_computed_distances():
    # a = (0, 0), (3, 4); b = (0, 0), (1, 1): |a-b|² = [[0, 2], [25, 13]] ((3-1)² + (4-1)² = 4 + 9)
    a = torch.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=F64)
    b = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=F64)
    assert squared_distances(a, b).tolist() == [[0.0, 2.0], [25.0, 13.0]]


@pytest.mark.parametrize("offset", [0.0, 13.0, 1e3], ids=["origin", "tori-scale", "far"])
@pytest.mark.parametrize("chunk", [None, 1, 7, 10**9])
def test_matches_the_float64_reference_far_from_the_origin_and_in_every_chunking(offset, chunk):
    # points with spread ~1 around a common offset: the product form without centring loses ~offset² · eps
    # there (1e6 · 2e-16 at offset 1e3); with centring the error stays at the rounding of the spread
    a = offset + torch.randn(23, 5, dtype=F64, generator=gen(0))
    b = offset + torch.randn(17, 5, dtype=F64, generator=gen(1))
    got = squared_distances(a, b, chunk_elements=chunk)
    assert got.shape == (23, 17) and got.dtype == F64 and bool((got >= 0).all())
    torch.testing.assert_close(got, reference(a, b), rtol=1e-12, atol=1e-11)


def test_self_distances_are_exactly_zero_on_the_diagonal_and_symmetric():
    x = 5.0 + torch.randn(30, 4, dtype=F64, generator=gen(2))
    d = squared_distances(x, x)
    assert bool((d.diagonal().abs() <= 1e-12).all())
    torch.testing.assert_close(d, d.T, rtol=0, atol=1e-12)


def test_float32_is_close_to_the_float64_reference():
    # float32 rounding of the centred terms (spread ~1, d = 50): relative error ~ d · 2^-24 on the sum of squares
    a = 10.0 + torch.randn(64, 50, generator=gen(3))
    b = 10.0 + torch.randn(48, 50, generator=gen(4))
    got = squared_distances(a, b)
    assert got.dtype == torch.float32
    ref = reference(a, b)
    assert float(((got.to(F64) - ref).abs() / ref).max()) < 1e-5


def test_memory_is_o_n_m_not_o_n_m_d():
    # no single operation may allocate more than a few (n, m) outputs; the explicit-difference form allocated
    # an (n, m, d) tensor, d = 50 times larger
    a = torch.randn(300, 50, dtype=F64, generator=gen(5))
    b = torch.randn(200, 50, dtype=F64, generator=gen(6))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        squared_distances(a, b)
    largest = max(e.cpu_memory_usage for e in prof.events())
    output = 300 * 200 * 8
    assert 0 < largest <= output
    # chunking bounds each chunk's temporaries (10 rows of 200 entries per chunk): apart from the output itself,
    # no allocation exceeds the centred copy of the input a (300 x 50)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        squared_distances(a, b, chunk_elements=2000)
    per_event = [e.cpu_memory_usage for e in prof.events() if e.cpu_memory_usage != output]
    assert max(per_event) <= 300 * 50 * 8 < output


def test_bad_shapes_and_chunks_are_named():
    with pytest.raises(ValueError, match="a, b"):
        squared_distances(torch.zeros(3, 2), torch.zeros(3, 4))
    with pytest.raises(ValueError, match="chunk_elements"):
        squared_distances(torch.zeros(3, 2), torch.zeros(3, 2), chunk_elements=0)


def test_the_estimator_equations_use_the_same_distances():
    # Eq. (10) and (13) through the new distances equal their definitions with explicit differences
    y = 2.0 + torch.randn(12, 3, dtype=F64, generator=gen(7))
    x = 2.0 + torch.randn(12, 3, dtype=F64, generator=gen(8))
    h = 0.3
    log_q = torch.logsumexp(-reference(y, x) / (2 * h), 1) - math.log(12) - 1.5 * math.log(2 * math.pi * h)
    torch.testing.assert_close(log_inverse_weights(y, x, h), -log_q, rtol=1e-12, atol=1e-12)
    log_w = log_inverse_weights(y, x, h)
    torch.testing.assert_close(
        posterior_logits(x, y, log_w, h, 0.1), log_w[None] - reference(x, y) / (2 * (h + 0.1)), rtol=1e-12, atol=1e-11
    )


def test_large_particle_sets_run_n1600_d50():
    # N = 1600, d = 50 is out of reach with an (N, N, d) tensor of differences (1 GB per call); one iteration with
    # M = 4, T = 2 takes well under a second of distances (N·N = 2.6e6 entries per call)
    x0 = torch.randn(1600, 50, dtype=F64, generator=gen(9))
    out = sample(lambda x: 0.5 * x.square().sum(-1), x0, 1, 0.5, 4, n_diffusion_steps=2, generator=gen(10))
    assert out.samples.shape == (1600, 50) and bool(torch.isfinite(out.samples).all())


def test_float32_end_to_end_keeps_the_gaussian_moments_as_float64_does():
    # the sampler in float32 on N(mu, 0.5 I), d = 2, from the same start as a float64 run: float32 particles
    # throughout, and the pooled moments of the last 25 of 30 iterations (10,000 correlated draws; standard error of
    # the mean ~0.02) agree with the truth as the float64 run's do. Finite N, M and T bias the variance up by ~10%
    # in both dtypes (measured 0.53-0.56 over three seeds each), so the bound on the variance is 20%.
    mu = torch.tensor([1.0, -2.0], dtype=F64)
    x0 = mu + math.sqrt(0.5) * torch.randn(400, 2, dtype=F64, generator=gen(0))
    runs = {
        dt: sample(lambda x: (x - mu.to(x.dtype)).square().sum(-1), x0, 30, 0.5, 64, generator=gen(1), dtype=dt)
        for dt in (torch.float32, F64)
    }
    assert runs[torch.float32].samples.dtype == torch.float32
    assert runs[torch.float32].snapshots.dtype == torch.float32
    for out in runs.values():
        pooled = out.snapshots[6:].reshape(-1, 2).to(F64)
        torch.testing.assert_close(pooled.mean(0), mu, rtol=0, atol=0.06)
        torch.testing.assert_close(pooled.var(0), torch.full((2,), 0.5, dtype=F64), rtol=0.2, atol=0)


def test_float32_studies_run_and_agree_with_float64_in_distribution():
    # the Gaussian-Lasso and tori studies at a tiny size in float32 (the gpu scale's dtype): finite KL curves and
    # shares, and the float32 and float64 KL curves of the same seed agree within the estimator's noise
    kw = dict(
        seed=0, n_particles=30, step_size=0.1, n_mc=32, n_diffusion_steps=3, n_iters=6, rgo_step=1 / 135,
        rgo_weak_convexity=27.0, rgo_iters=30, rgo_thin=3, window=3, reference_size=300, progress=lambda it, **_: it,
    )  # fmt: skip
    target = gaussian_lasso_mixture(gen(0))
    s32 = lasso_study(target, dtype=torch.float32, **kw)
    s64 = lasso_study(target, **kw)
    assert s32.final_samples["zod"].dtype == torch.float32 and s32.final_samples["rgo"].dtype == torch.float32
    for name in ("zod", "zod_independent", "rgo"):
        k32, k64 = s32.curves[name].kl, s64.curves[name].kl
        assert all(math.isfinite(v) for v in k32)
        assert abs(k32[-1] - k64[-1]) < 0.5, name
    tori = tori_study(
        TwoTori(), seed=0, n_particles=20, step_size=1.0, n_mc=8, n_diffusion_steps=3, sigma2_min=0.01, n_iters=3,
        max_trials=20, record_every=1, progress=lambda it, **_: it, dtype=torch.float32,
    )  # fmt: skip
    assert tori.final_samples["zod"].dtype == torch.float32
    assert all(0 <= a <= 1 and 0 <= b <= 1 for fr in tori.fractions.values() for a, b in fr)


def test_every_target_evaluates_in_float32_like_in_float64():
    # a float32 input gets float32 potentials and gradients (no silent promotion to float64 by the float64
    # parameters), equal to the float64 values up to float32 rounding
    from iclr26.zoprox.targets import DoubleWell, anisotropic_gaussian, ring_mixture

    targets = [
        anisotropic_gaussian(5, 10.0, gen(0)),
        ring_mixture(2, 4, 4.0, 0.5),
        gaussian_lasso_mixture(gen(1)),
        DoubleWell(dim=2, barrier=4.0),
    ]
    for t in targets:
        x = torch.randn(16, t.dim, dtype=F64, generator=gen(2))
        for fn in (t.potential, t.grad):
            got, want = fn(x.float()), fn(x)
            assert got.dtype == torch.float32, type(t).__name__
            torch.testing.assert_close(got.to(F64), want, rtol=1e-4, atol=1e-4)
    x = torch.randn(16, 3, dtype=F64, generator=gen(3)) * 5
    assert TwoTori().potential(x.float()).tolist() == TwoTori().potential(x).tolist()
