"""The reproduction's bookkeeping: KL windows and equal-budget pooling."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from iclr26.zoprox.metrics import knn_kl
from iclr26.zoprox.studies import (
    BudgetTarget,
    budget_study,
    pool_at_budget,
    pooled_kl_curve,
)
from iclr26.zoprox.targets import anisotropic_gaussian
from iclr26.zoprox.trace import SampleResult

F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def fake_run(n_iters: int, n: int, d: int, cost: int, seed: int = 0) -> SampleResult:
    """A run with a snapshot per iteration and a fixed ``cost`` queries per iteration (iterate k is N(k, 1))."""
    snaps = torch.stack([k + torch.randn(n, d, dtype=F64, generator=gen(seed + k)) for k in range(n_iters + 1)])
    iters = torch.arange(n_iters + 1)
    zero = torch.zeros(n_iters + 1, dtype=torch.long)
    return SampleResult(
        samples=snaps[-1],
        snapshots=snaps,
        snapshot_iters=iters,
        snapshot_evals=cost * iters,
        snapshot_grads=zero,
        snapshot_rounds=iters,
        snapshot_wall=iters.double(),
        n_iters=n_iters,
        n_evals=cost * n_iters,
        n_grads=0,
        n_rounds=n_iters,
        wall_time_s=float(n_iters),
    )


def test_pooled_kl_curve_thins_then_pools_consecutive_windows():
    # 20 iterations, thin 5 keeps iterations 5, 10, 15, 20; windows of 2 pool (5, 10) and (15, 20).
    run = fake_run(20, 30, 1, cost=7)
    reference = torch.randn(500, 1, dtype=F64, generator=gen(99))
    curve = pooled_kl_curve(run, reference, window=2, thin=5)
    assert curve.iters == [10, 20]
    assert curve.queries == [70, 140]
    expected = [knn_kl(torch.cat([run.snapshots[a], run.snapshots[b]]), reference) for a, b in ((5, 10), (15, 20))]
    assert curve.kl == pytest.approx(expected, rel=1e-12)


def test_pool_at_budget_takes_the_last_snapshot_within_each_point():
    run = fake_run(10, 4, 2, cost=10)
    pooled = pool_at_budget(run, [100, 55, 30])
    assert pooled.queries == [100, 50, 30]  # 55 falls between snapshots 5 (50 queries) and 6 (60)
    torch.testing.assert_close(pooled.samples, torch.cat([run.snapshots[10], run.snapshots[5], run.snapshots[3]]))
    # a run that paid 5 queries before its first snapshot cannot be pooled at 3 queries
    with pytest.raises(ValueError, match="points"):
        pool_at_budget(dataclasses.replace(run, snapshot_evals=run.snapshot_evals + 5), [3])


def test_budget_study_pools_every_sampler_at_the_same_budget_points():
    # Every fixed-cost sampler (ZOD-PS, its ablation, RWM with its initial evaluation, ULA, MALA with its initial
    # value-and-gradient) must be pooled exactly at the budget points and spend exactly the budget; the rejection
    # sampler (random cost per step) at most at each point.
    spec = BudgetTarget(
        "gaussian",
        anisotropic_gaussian(2, 4.0, gen(1)),
        torch.randn(8, 2, dtype=F64, generator=gen(2)),
        zod_step=0.3,
        smoothness=4.0,
        rwm_std=0.8,
        langevin_step=0.1,
    )
    res = budget_study(
        spec,
        seed=0,
        n_mc=4,
        n_diffusion_steps=2,
        zod_iters=3,
        pool_points=2,
        curve_points=2,
        progress=lambda it, desc=None: it,
    )
    per_iter = 8 * 4 * 2
    assert res.budget == 3 * per_iter and res.points == [3 * per_iter, 2 * per_iter]
    for name in ("zod", "zod_independent", "rwm", "ula", "mala"):
        assert res.pooled_queries[name] == res.points, name
        assert res.spent[name] == res.budget, name
    assert all(q <= p for q, p in zip(res.pooled_queries["rgo"], res.points, strict=True))
    assert all(p.shape == (2 * 8, 2) for p in res.pooled.values())
