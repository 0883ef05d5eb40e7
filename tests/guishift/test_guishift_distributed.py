"""GUI-Shift's GRPO and SFT steps under torchrun, each rank on its shard of the global batch.

The fast tests check in one process that the ranks' shard losses and gradients add up to the one-process step's;
the slow one runs the smoke reproduction under ``torchrun`` with two gloo ranks and compares it with one process.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.common.distributed import SINGLE, World, data_parallel
from iclr26.guishift.config import GUIShiftConfig
from iclr26.guishift.data import TransitionSet
from iclr26.guishift.env import generate_world, render
from iclr26.guishift.experiment import run
from iclr26.guishift.policy import GUIPolicy
from iclr26.guishift.training import (
    GRPOSettings,
    HeadSelect,
    grpo_shard_loss,
    grpo_step,
    sft_shard_loss,
    sft_step,
)
from tests.conftest import smoke_two_ranks_and_one

BACK = {"action_type": "navigate_back"}
CLICK = {"action_type": "click", "x": 6, "y": 10, "bbox": [4, 8, 8, 12]}
SCROLL = {"action_type": "scroll", "direction": "down"}

# Tolerance, 2 ranks vs 1 process (float32): a rank's shard loss is a partial sum that DDP adds to the other's where
# one process takes one mean, ~1e-7 relative; the CNN's batched convolutions on 3 vs 5 items may round differently.
REL_TOLERANCE = 1e-4


def _policy(seed=0):
    torch.manual_seed(seed)
    return GUIPolicy(size=32, n_apps=3, n_text=2, channels=8, hidden=16)


def _items(actions):
    world = generate_world(n_apps=3, n_text=2, seed=0)
    n = len(actions)
    states = world.states()[:n]
    screens = np.stack([render(world, s) for s in states])
    return TransitionSet(screens, screens[::-1].copy(), [[a] for a in actions], np.ones(n, np.int64))


def _grads(policy):
    return {n: p.grad.clone() for n, p in policy.named_parameters() if p.grad is not None}


def test_grpo_rank_shards_give_the_full_batch_loss_and_gradient():
    # Q = 5 items, G = 8 on 2 ranks: shards {0, 1, 2} and {3, 4} (shares 3/5, 2/5). Every rank samples the whole
    # batch with the shared generator, so both see the one-process actions and advantages; rank r backpropagates
    # its shard's mean surrogate (Eq. (3) over its 8·|r| samples) × 2 × share, so half the summed gradients (DDP's
    # average) is the one-process gradient and half the summed losses the one-process loss.
    items = _items([BACK, CLICK, BACK, SCROLL, BACK])
    settings = GRPOSettings(group_size=8, beta=0.04)
    policy = _policy()
    reference = _policy()
    reference.requires_grad_(False)
    gen = torch.Generator().manual_seed(3)
    state = gen.get_state()
    stats = grpo_step(policy, reference, torch.optim.SGD(policy.parameters(), lr=0.0), items, settings, gen)
    expected = _grads(policy)
    assert 0 < stats.informative  # some groups carry advantage, so the gradient is not only the KL's
    policy.zero_grad(set_to_none=True)
    losses = []
    for rank in range(2):
        gen.set_state(state)
        loss, rewards, _ = grpo_shard_loss(policy, reference, items, settings, gen, rank=rank, size=2)
        loss.backward()
        losses.append(loss.item())
        assert float(rewards.mean()) == pytest.approx(stats.reward)  # the whole batch's rewards on every rank
    assert sum(losses) / 2 == pytest.approx(stats.loss, rel=1e-5, abs=1e-7)
    got = _grads(policy)
    assert got.keys() == expected.keys() and expected
    assert any(float(g.abs().max()) > 0 for g in expected.values())
    for name, grad in expected.items():
        assert torch.allclose(got[name] / 2, grad, rtol=1e-4, atol=1e-7), name


def test_sft_rank_shards_give_the_full_batch_loss_and_gradient():
    # 5 items on 2 ranks; the loss is Σ_items [NLL(type) + NLL(param | type)] / 5, so a shard's summed NLL / 5 × 2
    # averaged over the ranks is the one-process loss; the click head is used on rank 0 only, the scroll head on
    # rank 1 only (a per-shard mean would weight them wrongly: 1/3 and 1/2 instead of 1/5)
    items = _items([CLICK, BACK, BACK, SCROLL, BACK])
    policy = _policy(1)
    stats = sft_step(policy, torch.optim.SGD(policy.parameters(), lr=0.0), items)
    expected = _grads(policy)
    policy.zero_grad(set_to_none=True)
    losses = []
    for rank in range(2):
        loss = sft_shard_loss(policy, items, rank=rank, size=2)
        loss.backward()
        losses.append(loss.item())
    assert sum(losses) / 2 == pytest.approx(stats.loss, rel=1e-6)
    assert losses[0] != pytest.approx(losses[1], rel=1e-3)
    got = _grads(policy)
    assert got.keys() == expected.keys()
    for name, grad in expected.items():
        assert torch.allclose(got[name] / 2, grad, rtol=1e-4, atol=1e-7), name


def test_ddp_module_returns_only_the_heads_a_loss_uses():
    policy = _policy()
    x = torch.zeros(2, 9, 32, 32)
    out = HeadSelect(policy)(x, keep=(True, False, True, False, False, False))
    assert out[0] is not None and out[2] is not None and out[1] is None and out[3] is None
    dist = HeadSelect(policy)(x)
    assert torch.equal(dist.type, out[0])
    heads = HeadSelect(policy)
    assert data_parallel(heads, SINGLE) is heads  # one process: no wrapper, the plain step


def test_a_batch_smaller_than_the_world_is_refused():
    with pytest.raises(ValueError, match="items"):
        sft_shard_loss(_policy(), _items([BACK, BACK]), rank=0, size=3)
    # the run refuses it before any work, naming the config field (a stand-in context: only its world is read)
    config = GUIShiftConfig.from_dict({**GUIShiftConfig.preset_values("smoke"), "batch": 2})
    with pytest.raises(ConfigError, match="batch"):
        run(config, SimpleNamespace(world=World(rank=0, size=3)))


@pytest.mark.slow  # ~25 s on the loaded 2-core machine: the smoke reproduction twice, once under torchrun
def test_smoke_under_torchrun_writes_one_record_with_the_single_process_results(tmp_path):
    record, single = smoke_two_ranks_and_one("guishift", tmp_path)
    for arm, ref in single["metrics"]["arms"].items():
        mine = record["metrics"]["arms"][arm]
        # accuracies are counts over the same held-out items: equal unless a rounding flips an argmax
        assert mine["automation_accuracy"] == pytest.approx(ref["automation_accuracy"], abs=1e-9), arm
        if ref["final_reward"] is not None:
            assert mine["final_reward"] == pytest.approx(ref["final_reward"], rel=REL_TOLERANCE), arm
    assert record["evidence"] == single["evidence"]
