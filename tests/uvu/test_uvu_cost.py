"""Counted compute (iclr26.uvu.cost): multiply-adds by hand, and against the matmul FLOPs torch itself counts."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from iclr26.uvu import (
    RND,
    UVU,
    CountedCost,
    Transitions,
    UniversalMLP,
    ValueEnsemble,
    ensemble_cost,
    mlp_backward_macs,
    mlp_forward_macs,
    rnd_cost,
    uvu_cost,
)

# D_s = 3, 4 discrete actions (one-hot), D_z = 2: d_0 = 9; hidden (6, 5)
STATE, ACTIONS, TASK, HIDDEN = 3, 4, 2, (6, 5)


def test_mlp_counts_by_hand():
    # widths (9, 6, 5, 2): F = 9*6 + 6*5 + 5*2 = 54 + 30 + 10 = 94; B = 2*94 - 9*6 = 188 - 54 = 134
    assert mlp_forward_macs((9, 6, 5, 2)) == 94
    assert mlp_backward_macs((9, 6, 5, 2)) == 134
    # one layer (3, 4): F = 12, B = 24 - 12 = 12 (a weight gradient only)
    assert (mlp_forward_macs((3, 4)), mlp_backward_macs((3, 4))) == (12, 12)
    with pytest.raises(ValueError, match="widths"):
        mlp_forward_macs((9,))
    with pytest.raises(ValueError, match="widths"):
        mlp_backward_macs((9, 0, 2))


def test_method_counts_by_hand():
    # H = 2 heads: F = 94, B = 134 (above). UVU: 4*94 + 134 = 510 per transition, 2*94 = 188 per query.
    assert uvu_cost((9, 6, 5, 2)) == CountedCost(update_macs=510, query_macs=188)
    # RND: 2*94 + 134 = 322 per transition, 188 per query.
    assert rnd_cost((9, 6, 5, 2)) == CountedCost(update_macs=322, query_macs=188)
    # ensemble of 3 one-head members: F = 54 + 30 + 5 = 89, B = 178 - 54 = 124;
    # 3 * (2*89 + 124) = 3 * 302 = 906 per transition, 3 * 89 = 267 per query.
    assert ensemble_cost((9, 6, 5, 1), 3) == CountedCost(update_macs=906, query_macs=267)
    with pytest.raises(ValueError, match="members"):
        ensemble_cost((9, 6, 5, 1), 0)


def test_network_reports_its_layer_widths():
    net = UniversalMLP(STATE, TASK, num_actions=ACTIONS, hidden=HIDDEN, num_heads=2)
    assert net.widths == (9, 6, 5, 2)
    continuous = UniversalMLP(STATE, TASK, action_dim=3, hidden=(7,), num_heads=4)
    assert continuous.widths == (8, 7, 4)


def _batch(n: int) -> Transitions:
    g = torch.Generator().manual_seed(0)
    return Transitions(
        states=torch.randn(n, STATE, generator=g),
        actions=torch.randint(ACTIONS, (n,), generator=g),
        rewards=torch.randn(n, generator=g),
        next_states=torch.randn(n, STATE, generator=g),
        next_actions=torch.randint(ACTIONS, (n,), generator=g),
        dones=torch.zeros(n),
        tasks=torch.randn(n, TASK, generator=g),
    )


def _make(heads: int):
    return lambda: UniversalMLP(STATE, TASK, num_actions=ACTIONS, hidden=HIDDEN, num_heads=heads)


@pytest.mark.parametrize("method", ["UVU", "ensemble-3", "RND"])
def test_counts_equal_the_matmul_flops_torch_counts(method):
    """One loss + backward on B transitions runs 2 * B * update_macs matmul FLOPs (a multiply-add is 2 FLOPs), one
    uncertainty query of B points 2 * B * query_macs: the analytic count is what the code really computes."""
    torch.manual_seed(0)
    if method == "UVU":
        model, cost = UVU(_make(2)(), _make(2)(), gamma=0.9), uvu_cost(_make(2)().widths)
    elif method == "RND":
        model, cost = RND(_make(2)(), _make(2)()), rnd_cost(_make(2)().widths)
    else:
        model, cost = ValueEnsemble(_make(1), 3, gamma=0.9), ensemble_cost(_make(1)().widths, 3)
    b = 5
    batch = _batch(b)
    with FlopCounterMode(display=False) as update:
        model.loss(batch).backward()
    with FlopCounterMode(display=False) as query, torch.no_grad():
        model.uncertainty(batch.states, batch.actions, batch.tasks)
    assert update.get_total_flops() == 2 * b * cost.update_macs
    assert query.get_total_flops() == 2 * b * cost.query_macs


def test_uvu_is_a_fraction_of_a_ten_member_ensemble_at_the_cpu_sizes():
    """The cpu config's sizes: GoToDoor(7) gives d_0 = D_s + 7 + D_z = 98 + 7 + 6 = 111; hidden (128, 128); 8 UVU
    heads; 10 one-head members. F_8 = 111*128 + 128*128 + 128*8 = 14208 + 16384 + 1024 = 31616, so UVU =
    6 F_8 - 14208 = 189696 - 14208 = 175488. F_1 = 14208 + 16384 + 128 = 30720, so the ensemble =
    10 (4 F_1 - 14208) = 10 * 108672 = 1086720. Ratio 0.1615: well under the verdict's 0.5."""
    uvu, ens = uvu_cost((111, 128, 128, 8)), ensemble_cost((111, 128, 128, 1), 10)
    assert (uvu.update_macs, ens.update_macs) == (175488, 1086720)
    assert uvu.update_macs / ens.update_macs == pytest.approx(0.1615, abs=1e-4)
