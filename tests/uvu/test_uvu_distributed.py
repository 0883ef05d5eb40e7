"""UVU's trainers (``fit`` for UVU, ensembles and RND; the offline CQL Q-function) under torchrun.

Each rank keeps its contiguous shard of the global batch (:func:`iclr26.uvu.training.shard_loss`), weights its mean
loss by ``world_size ×`` its share, and DDP averages the gradients: the global batch's step on every rank.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from iclr26.common.distributed import World
from iclr26.uvu.data import Transitions
from iclr26.uvu.training import shard_loss
from tests.conftest import torchrun

# Tolerance of a metric, 2 ranks vs 1 process with the same global batch: the same per-row gradients averaged in
# another order (all-reduce of two half-batch means vs one mean) move float32 values by ~1e-7 relative per step and
# float64 ones (the NTK study) by ~1e-15; the smoke measured at most 2.3e-8 relative (the rejection study's value
# error). A changed batch row moves the value error by ~1e-3.
REL_TOLERANCE = 1e-5


def _transitions(n: int) -> Transitions:
    g = torch.Generator().manual_seed(0)
    states, next_states = torch.randn(n, 3, generator=g), torch.randn(n, 3, generator=g)
    actions = torch.randint(0, 2, (n,), generator=g)
    return Transitions(
        states=states, actions=actions, rewards=torch.randn(n, generator=g), next_states=next_states,
        next_actions=actions.flip(0), dones=torch.zeros(n), tasks=torch.ones(n, 1),
    )  # fmt: skip


def test_rank_shards_of_a_batch_give_the_global_loss_and_gradient():
    # 7 rows on 2 ranks: rank 0 rows 0-3 (share 4/7), rank 1 rows 4-6 (share 3/7). Each rank's value is its mean
    # loss times its share, so the values sum (all-reduce) to the 7-row mean; each backpropagated loss is that times
    # world_size = 2, so DDP's average of the two gradients is the gradient of the 7-row mean.
    torch.manual_seed(0)
    head = torch.nn.Linear(3, 1)

    def loss(batch: Transitions) -> torch.Tensor:
        return (head(batch.states).squeeze(-1) - batch.rewards).pow(2).mean()

    batch = _transitions(7)
    full = loss(batch)
    full.backward()
    expected = [p.grad.clone() for p in head.parameters()]
    head.zero_grad()
    values = []
    for rank in (0, 1):  # without a process group all_reduce_sum is the identity: the rank's own term
        scaled, value = shard_loss(loss, batch, World(rank=rank, size=2))
        assert scaled.item() == pytest.approx(2 * value, rel=1e-6)
        values.append(value)
        scaled.backward()  # the gradients of both ranks accumulate: their sum is 2 x DDP's average
    assert sum(values) == pytest.approx(full.item(), rel=1e-6)
    for p, g in zip(head.parameters(), expected, strict=True):
        assert torch.allclose(p.grad / 2, g, atol=1e-6)
    with pytest.raises(ValueError, match="smaller than the 3 ranks"):
        shard_loss(loss, _transitions(2), World(rank=0, size=3))


@pytest.mark.slow  # 137 s on the loaded 2-core machine: the smoke reproduction twice, once under torchrun
def test_smoke_under_torchrun_writes_one_record_with_the_single_process_metrics(tmp_path):
    two = torchrun("-m", "iclr26", "run", "uvu", "--scale", "smoke", "--quiet", "--out", str(tmp_path / "two"))
    assert two.returncode == 0, two.stderr
    (record_file,) = (tmp_path / "two" / "uvu").glob("*/result.json")
    assert [p.name for p in (tmp_path / "two" / "uvu").iterdir()] == [record_file.parent.name]
    record = json.loads(record_file.read_text())
    assert record["world_size"] == 2

    one = subprocess.run(
        [sys.executable, "-m", "iclr26", "run", "uvu", "--scale", "smoke", "--quiet", "--out", str(tmp_path / "one")],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    (single_file,) = (tmp_path / "one" / "uvu").glob("*/result.json")
    single = json.loads(single_file.read_text())
    assert single["world_size"] == 1
    mine, ref = record["metrics"], single["metrics"]
    for key in ("gap_uvu_vs_ensemble", "gap_uvu_vs_limit", "max_td_residual_uvu", "max_td_residual_ensemble"):
        assert mine["ntk"][key] == pytest.approx(ref["ntk"][key], rel=REL_TOLERANCE), key  # full-batch SGD
    for rep_mine, rep_ref in zip(mine["rejection"], ref["rejection"], strict=True):  # minibatch Adam and CQL
        assert rep_mine["mean_value_error"] == pytest.approx(rep_ref["mean_value_error"], rel=REL_TOLERANCE)
        assert rep_mine["base_success"] == rep_ref["base_success"]  # the CQL policy's roll-outs
