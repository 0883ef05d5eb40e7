"""LAMIR's losses and targets against hand-computed single steps (derivations in the comments)."""

from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("pyspiel")  # the package re-exports the OpenSpiel bot (extra "games")

from iclr26.lamir.learners import annealed_gamma  # noqa: E402
from iclr26.lamir.losses import (  # noqa: E402
    assignment_loss,
    direction_targets,
    neurd_loss,
    soft_clustering_loss,
    transform_policy,
    vtrace_targets,
)


def test_soft_clustering_loss_value_and_gradient_by_hand():
    # Centroids 0 and 3, point 1: d = (1, 4). With γ = ln2/3, softmax(-γ d) = (1, e^{-3γ}) / Σ = (2/3, 1/3).
    # L^A = 1·2/3 + 4·1/3 = 2. Responsibilities are constants, so dL/dc_l = r_l · 2 (c_l - x) = (-4/3, 4/3).
    centroids = torch.tensor([[[0.0], [3.0]]], requires_grad=True)
    out = soft_clustering_loss(centroids, torch.tensor([[1.0]]), gamma=math.log(2) / 3)
    assert out.loss.item() == pytest.approx(2.0)
    out.loss.backward()
    torch.testing.assert_close(centroids.grad, torch.tensor([[[-4 / 3], [4 / 3]]]))
    assert out.nearest.tolist() == [0]


def test_soft_clustering_becomes_hard_kmeans_for_large_gamma():
    # γ → ∞: the loss is the squared distance to the nearest centroid (1 here).
    out = soft_clustering_loss(torch.tensor([[[0.0], [3.0]]]), torch.tensor([[1.0]]), gamma=200.0)
    assert out.loss.item() == pytest.approx(1.0, abs=1e-6)


def test_soft_clustering_weights_and_shapes():
    cents = torch.tensor([[[0.0]], [[0.0]]])
    points = torch.tensor([[1.0], [3.0]])
    # weights (1, 0): only the first sample (d = 1) counts; float32 softmax and weighted mean: a few ulp of 1.0
    out = soft_clustering_loss(cents, points, gamma=1.0, weights=torch.tensor([1.0, 0.0]))
    assert out.loss.item() == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="centroids must be"):
        soft_clustering_loss(cents, torch.zeros(2, 3), gamma=1.0)
    with pytest.raises(ValueError, match="gamma"):
        soft_clustering_loss(cents, points, gamma=0.0)


def test_assignment_loss_is_cross_entropy_to_the_nearest():
    # softmax(0, ln 3) = (1/4, 3/4); target 1 -> -ln(3/4).
    logits = torch.tensor([[0.0, math.log(3.0)]])
    assert assignment_loss(logits, torch.tensor([1])).item() == pytest.approx(-math.log(0.75))


def test_transform_policy_clips_and_normalises_over_legal_actions():
    # π + χ = (0.9, -0.2, 0.3, ·) -> clip (0.9, 0, 0.3) -> / 1.2 = (0.75, 0, 0.25); the illegal 4th action stays 0.
    policy = torch.tensor([0.5, 0.3, 0.2, 0.0])
    chi = torch.tensor([[0.4, -0.5, 0.1, 0.0]])
    legal = torch.tensor([True, True, True, False])
    torch.testing.assert_close(transform_policy(policy, chi, legal), torch.tensor([[0.75, 0.0, 0.25, 0.0]]))
    with pytest.raises(ValueError, match="no mass"):
        transform_policy(policy, torch.tensor([[-1.0, -1.0, -1.0, 0.0]]), legal)


def test_direction_targets_rescale_to_unit_l1():
    # δ = (0.02, -0.01, -0.01) has L1 norm 0.04 -> (0.5, -0.25, -0.25).
    out = direction_targets(torch.tensor([[0.02, -0.01, -0.01]]), scale=1.0)
    torch.testing.assert_close(out, torch.tensor([[0.5, -0.25, -0.25]]))


def test_vtrace_two_steps_by_hand():
    # V = (0.5, 0.2), r = (0.1, 1.0), π/μ = (2, 0.5), ρ̄ = c̄ = 1 -> ρ = c = (1, 0.5).
    # s=1: δ = 0.5·(1 + 0 - 0.2) = 0.4, v_1 = 0.2 + 0.4 = 0.6.
    # s=0: δ = 1·(0.1 + 0.2 - 0.5) = -0.2, v_0 = 0.5 - 0.2 + 1·(0.6 - 0.2) = 0.7.
    values = torch.tensor([[0.5], [0.2]])
    out = vtrace_targets(
        values,
        torch.tensor([[0.1], [1.0]]),
        torch.tensor([[2.0], [0.5]]),
        torch.ones(2, 1, dtype=torch.bool),
        rho_bar=1.0,
        c_bar=1.0,
    )
    torch.testing.assert_close(out, torch.tensor([[0.7], [0.6]]))


def test_vtrace_on_policy_is_the_monte_carlo_return_and_masks_padding():
    # Ratios 1 and λ = 1: the target is the undiscounted return whatever V is. Episode 2 ends after one step.
    values = torch.tensor([[0.3, -0.4], [0.9, 0.7], [0.1, 0.2]])
    rewards = torch.tensor([[0.0, 1.0], [0.0, 0.0], [-1.0, 0.0]])
    valid = torch.tensor([[True, True], [True, False], [True, False]])
    out = vtrace_targets(values, rewards, torch.ones(3, 2), valid, rho_bar=1.0, c_bar=1.0)
    torch.testing.assert_close(out, torch.tensor([[-1.0, 1.0], [-1.0, 0.0], [-1.0, 0.0]]))


def test_neurd_gradient_is_minus_the_advantage():
    # y = (0, 0), π = (1/2, 1/2), Q = (1, 0): advantage (1/2, -1/2). L = -Σ (y_a - ȳ) A_a, dL/dy = -(A - mean A).
    logits = torch.zeros(1, 2, requires_grad=True)
    policy = torch.full((1, 2), 0.5)
    loss = neurd_loss(
        logits, policy, torch.tensor([[1.0, 0.0]]), torch.ones(1, 2, dtype=torch.bool), threshold=2.0, clip=10.0
    )
    loss.sum().backward()
    torch.testing.assert_close(logits.grad, torch.tensor([[-0.5, 0.5]]))


def test_neurd_threshold_stops_pushing_saturated_logits():
    # Centred logits (3, -3) beyond β = 2, pushed further out by the advantage (1/2, -1/2): no gradient.
    logits = torch.tensor([[3.0, -3.0]], requires_grad=True)
    loss = neurd_loss(
        logits,
        torch.tensor([[0.99, 0.01]]),
        torch.tensor([[1.0, 0.0]]),
        torch.ones(1, 2, dtype=torch.bool),
        threshold=2.0,
        clip=10.0,
    )
    loss.sum().backward()
    torch.testing.assert_close(logits.grad, torch.zeros(1, 2))


def test_gamma_annealing_is_geometric_and_capped():
    assert annealed_gamma(0.0, start=0.25, end=64.0) == pytest.approx(0.25)
    # Halfway through the annealing window (0.35 of 0.7): sqrt(0.25 · 64) = 4.
    assert annealed_gamma(0.35, start=0.25, end=64.0) == pytest.approx(4.0)
    assert annealed_gamma(0.9, start=0.25, end=64.0) == pytest.approx(64.0)
