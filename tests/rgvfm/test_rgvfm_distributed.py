"""RG-VFM's trainer under torchrun (two processes, gloo on the CPU) equals one process with the same batch.

The launched processes run ``SCRIPT``: the same :class:`~iclr26.rgvfm.training.FlowTrainer` as the one-process
reference below (same data, initial weights, generator and global batch), each rank on its shard of every batch,
and print the losses and final weights as JSON (rank 0) or the weights' checksum (every rank).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from iclr26.common.distributed import SINGLE, World
from iclr26.rgvfm import Sphere, TimeMLP, build_flow, make_prior
from iclr26.rgvfm.benchmarks import checkerboard
from iclr26.rgvfm.training import FlowTrainer
from tests.conftest import torchrun

SCRIPT = r"""
import json, sys
import torch
import torch.distributed as dist
from iclr26.common import distributed as D

world = D.world_from_env()
D.init_process_group(world)
sys.path[:0] = [sys.argv[1], sys.argv[1] + '/../..']  # this folder, and the checkout for `tests`
from test_rgvfm_distributed import train  # the same setup as the one-process reference

trainer = train(world)
weights = torch.cat([p.detach().reshape(-1) for p in trainer.params])
out = [None] * world.size
dist.all_gather_object(out, weights.tolist())
if world.is_main:
    print("RESULT " + json.dumps({"losses": trainer.losses_tensor().tolist(), "weights": out, "step": trainer.step,
                                   "best_step": trainer.best_step}))
D.destroy_process_group(synchronise=True)
"""

STEPS, BATCH = 12, 30  # 30 rows: 15 per rank; epoch_steps=4 exercises the best-loss checkpoint on the summed loss

# Tolerance, 2 ranks vs 1 process with the same global batch (float32): the two average the same per-row gradients in
# another order (DDP's all-reduce of two half-batch means vs one mean), which moves a loss by ~1e-7 relative per step
# and Adam carries it on: the rgvfm smoke (24 steps, S² and H²) measured at most 1.4e-5 relative on a loss, this
# test ~1e-6. A changed batch row moves the mean loss by ~1/B of a row's loss spread, ~1e-2 here.
REL_TOLERANCE = 1e-4


def train(world: World = SINGLE) -> FlowTrainer:
    """A small RG-VFM-M run on the S² checkerboard with the best-loss checkpoint and EMA (both ranks and reference)."""
    sphere = Sphere(2)
    data = checkerboard(sphere, 200, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(2)
    network = TimeMLP(3, hidden_dim=16)
    flow = build_flow("rgvfm", sphere, network)
    prior = make_prior(sphere, intrinsic=True)
    trainer = FlowTrainer(
        flow, network.parameters(), data, prior, batch_size=BATCH, lr=1e-2, generator=torch.Generator().manual_seed(3),
        epoch_steps=4, ema_decay=0.5, world=world,
    )  # fmt: skip
    trainer.run(STEPS)
    return trainer


def test_two_ranks_train_the_flow_as_one_process_with_the_same_batch(tmp_path):
    script = tmp_path / "launch.py"
    script.write_text(SCRIPT)
    proc = torchrun(str(script), str(Path(__file__).parent))
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    two = json.loads(line.removeprefix("RESULT "))

    one = train()
    assert two["step"] == one.step == STEPS and two["best_step"] == one.best_step
    reference = one.losses_tensor()
    assert torch.tensor(two["losses"]) == pytest.approx(reference, rel=REL_TOLERANCE)
    assert not torch.equal(reference[1:], reference[:-1])  # the trajectory moves, so the comparison can fail
    weights0, weights1 = (torch.tensor(w) for w in two["weights"])
    assert torch.equal(weights0, weights1)  # DDP: every rank took the same averaged step
    mine = torch.cat([p.detach().reshape(-1) for p in one.params])
    assert weights0 == pytest.approx(mine, rel=REL_TOLERANCE, abs=1e-6)


@pytest.mark.slow  # 69 s on the loaded 2-core machine: the smoke reproduction twice, once under torchrun
def test_smoke_under_torchrun_writes_one_record_with_the_single_process_losses(tmp_path):
    small = ["--set", "benchmarks=sphere_checkerboard", "--set", "models=rfm,rgvfm"]
    two = torchrun(
        "-m", "iclr26", "run", "rgvfm", "--scale", "smoke", "--quiet", "--out", str(tmp_path / "two"), *small
    )
    assert two.returncode == 0, two.stderr
    (record_file,) = (tmp_path / "two" / "rgvfm").glob("*/result.json")
    assert [p.name for p in (tmp_path / "two" / "rgvfm").iterdir()] == [record_file.parent.name]
    record = json.loads(record_file.read_text())
    assert record["world_size"] == 2

    one = subprocess.run(
        [sys.executable, "-m", "iclr26", "run", "rgvfm", "--scale", "smoke", "--quiet", "--out", str(tmp_path / "one"),
         *small],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    (single_file,) = (tmp_path / "one" / "rgvfm").glob("*/result.json")
    single = json.loads(single_file.read_text())
    assert single["world_size"] == 1
    for key in ("rfm", "rgvfm"):
        mine, ref = (
            record["metrics"]["results"]["sphere_checkerboard"][key],
            single["metrics"]["results"]["sphere_checkerboard"][key],
        )
        assert mine["loss_trace_seed0"] == pytest.approx(ref["loss_trace_seed0"], rel=REL_TOLERANCE)
        assert mine["train_loss"]["mean"] == pytest.approx(ref["train_loss"]["mean"], rel=REL_TOLERANCE)
