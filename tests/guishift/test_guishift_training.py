"""The policy's log-probabilities, the data filter, one GRPO step and one SFT step."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from iclr26.guishift.data import TransitionSet
from iclr26.guishift.env import generate_world, render
from iclr26.guishift.policy import GUIPolicy, SampledActions, decode_actions, encode_label, screens_to_tensor
from iclr26.guishift.training import GRPOSettings, evaluate, grpo_step, mixed_groups, sft_step

BACK = {"action_type": "navigate_back"}


def _policy(seed=0):
    torch.manual_seed(seed)
    return GUIPolicy(size=32, n_apps=3, n_text=2, channels=8, hidden=16)


def _items(gts, n=4):
    world = generate_world(n_apps=3, n_text=2, seed=0)
    states = world.states()[:n]
    screens = np.stack([render(world, s) for s in states])
    return TransitionSet(screens, screens[::-1].copy(), [list(gts) for _ in range(n)], np.ones(n, np.int64))


def test_mixed_groups_on_hand_made_groups():
    correct = torch.tensor([[0, 0, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0], [0, 1, 1, 1]], dtype=torch.bool)
    # all wrong and all right are dropped (zero advantage everywhere); partly right groups are kept
    assert mixed_groups(correct).tolist() == [False, False, True, True]
    with pytest.raises(ValueError, match="correct"):
        mixed_groups(correct[0])


def test_log_prob_is_type_plus_parameter():
    policy = _policy()
    items = _items([BACK])
    dist = policy(screens_to_tensor(items.before, items.after))
    actions = SampledActions(torch.tensor([[0, 2, 3]]).repeat(4, 1), torch.tensor([[5, 0, 1]]).repeat(4, 1))
    lp = GUIPolicy.log_prob(dist, actions)
    # click in cell 5: log π(click) + log π(cell 5); back: log π(back); open_app app1: log π(open) + log π(app 1)
    assert torch.allclose(lp[:, 0], dist.type[:, 0] + dist.click[:, 5])
    assert torch.allclose(lp[:, 1], dist.type[:, 2])
    assert torch.allclose(lp[:, 2], dist.type[:, 3] + dist.app[:, 1])
    for head in (dist.type, dist.click, dist.direction, dist.app, dist.text):
        assert torch.allclose(head.exp().sum(-1), torch.ones(4))


def test_decode_and_encode_are_inverse_and_click_is_the_cell_centre():
    actions = SampledActions(torch.tensor([[0, 0, 1, 3, 4, 2]]), torch.tensor([[0, 63, 3, 2, 1, 0]]))
    dicts = decode_actions(actions, cell=4, grid=8)[0]
    assert dicts[0] == {"action_type": "click", "x": 2, "y": 2}
    assert dicts[1] == {"action_type": "click", "x": 30, "y": 30}  # cell 63 = row 7, col 7: pixels 28..31
    assert dicts[2] == {"action_type": "scroll", "direction": "right"}
    for i, d in enumerate(dicts):
        assert encode_label(d, cell=4, grid=8) == (actions.type[0, i].item(), actions.param[0, i].item())


def test_policy_rejects_bad_input():
    with pytest.raises(ValueError, match="x must have shape"):
        _policy()(torch.zeros(2, 6, 32, 32))
    with pytest.raises(ValueError, match="cell"):
        GUIPolicy(size=32, cell=8, n_apps=2, n_text=2)


def test_grpo_step_without_signal_leaves_the_policy_unchanged():
    # a ground truth no sampled action can match: every sample earns R_format = 1 only, every group is identical,
    # the advantage is 0, and at π_θ = π_ref the k3 KL has zero gradient (d/dx (e^x − x − 1) = 0 at x = 0),
    # so Adam's first step moves nothing
    policy = _policy()
    before = copy.deepcopy(policy.state_dict())
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    stats = grpo_step(policy, copy.deepcopy(policy), opt, _items([{"action_type": "long_press"}]), GRPOSettings(),
                      torch.Generator().manual_seed(0))  # fmt: skip
    assert stats.reward == 1.0 and stats.informative == 0.0
    assert all(torch.equal(before[k], v) for k, v in policy.state_dict().items())


def test_grpo_steps_raise_the_probability_of_the_rewarded_action():
    policy = _policy(1)
    items = _items([BACK])
    x = screens_to_tensor(items.before, items.after)
    p0 = policy(x).type[:, 2].exp().mean().item()
    ref = copy.deepcopy(policy)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        grpo_step(policy, ref, opt, items, GRPOSettings(group_size=16), gen)
    assert policy(x).type[:, 2].exp().mean().item() > p0 + 0.05


def test_sft_step_lowers_the_loss_and_evaluate_scores_greedy_actions():
    policy = _policy(2)
    items = _items([{"action_type": "click", "x": 13, "y": 9, "bbox": [12, 8, 15, 11]}])
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    first = sft_step(policy, opt, items).loss
    # initial loss ≈ log 5 + log 64 (uniform type and cell heads)
    assert first == pytest.approx(math.log(5) + math.log(64), abs=0.3)
    for _ in range(30):
        last = sft_step(policy, opt, items).loss
    assert last < first / 4
    assert evaluate(policy, items).tolist() == [1.0] * 4  # the greedy click lands in cell (3, 2) = the bbox
