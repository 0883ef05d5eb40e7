"""MEOM's students under torchrun (two processes, gloo on the CPU) and gradient accumulation.

A step's batch is the global batch: rank r trains on its contiguous shard, split into ``accumulation_steps``
micro-batches; BatchNorm normalises each micro-batch, so 2 ranks x 1 micro-batch equal 1 process x 2 micro-batches.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.common.distributed import SINGLE
from iclr26.meom.experiment import MEOMConfig, split_step
from tests.conftest import torchrun

# Tolerance of a training loss, 2 ranks vs 1 process with 2 accumulation steps (float32): the same per-image
# gradients summed in another order (all-reduce of two micro-batch gradients vs accumulation in one process) move a
# loss by ~1e-7 relative per step; the smoke measured equal losses to the last bit. A changed batch row moves the
# epoch-mean loss by ~1e-3 (1/64 of a batch whose losses spread by ~0.1).
LOSS_TOLERANCE = 1e-5


def test_accumulated_micro_batches_give_the_full_batch_gradient():
    # Without BatchNorm the micro-batches change nothing: the gradient of sum_i (n_i / B) mean_i(loss) is the
    # gradient of the batch mean, so 3 micro-batches of a 10-row batch (4 + 3 + 3 rows) equal one forward.
    torch.manual_seed(0)
    net = torch.nn.Linear(5, 3)
    x, y = torch.randn(10, 5), torch.randint(0, 3, (10,))

    def step_loss(rows: slice) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(net(x[rows]), y[rows])

    full = step_loss(slice(None))
    full.backward()
    expected = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    value = split_step(step_loss, net, 10, 3, SINGLE)
    assert value == pytest.approx(full.item(), rel=1e-6)
    for p, g in zip(net.parameters(), expected, strict=True):
        assert torch.allclose(p.grad, g, atol=1e-7)
    # With BatchNorm they do change it: statistics are per micro-batch (the documented DDP behaviour).
    bn = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.BatchNorm1d(3))
    one = torch.nn.functional.cross_entropy(bn(x), y).item()
    net = bn
    assert split_step(step_loss, net, 10, 2, SINGLE) != pytest.approx(one, rel=1e-6)


def test_micro_batches_smaller_than_two_images_are_refused_naming_the_field():
    with pytest.raises(ConfigError, match="accumulation_steps"):
        MEOMConfig(accumulation_steps=0)
    with pytest.raises(ConfigError, match="accumulation_steps"):
        MEOMConfig(batch_size=6, accumulation_steps=4)
    net = torch.nn.Linear(5, 3)
    with pytest.raises(ValueError, match="fewer than 2 images"):
        split_step(lambda rows: net(torch.randn(5, 5)[rows]).sum(), net, 5, 3, SINGLE)


@pytest.mark.slow  # 78 s on the loaded 2-core machine: the smoke reproduction twice, once under torchrun
def test_smoke_under_torchrun_equals_one_process_with_two_accumulation_steps(tmp_path):
    longer = ["--set", "student_epochs=2", "--set", "teacher_epochs=2", "--set", "mask_mode=per_step"]
    two = torchrun(
        "-m", "iclr26", "run", "meom", "--scale", "smoke", "--quiet", "--out", str(tmp_path / "two"), *longer
    )
    assert two.returncode == 0, two.stderr
    (record_file,) = (tmp_path / "two" / "meom").glob("*/result.json")
    assert [p.name for p in (tmp_path / "two" / "meom").iterdir()] == [record_file.parent.name]
    record = json.loads(record_file.read_text())
    assert record["world_size"] == 2

    one = subprocess.run(
        [sys.executable, "-m", "iclr26", "run", "meom", "--scale", "smoke", "--quiet", "--out", str(tmp_path / "one"),
         *longer, "--set", "accumulation_steps=2"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    (single_file,) = (tmp_path / "one" / "meom").glob("*/result.json")
    single = json.loads(single_file.read_text())
    assert single["world_size"] == 1
    # the teacher trains whole on every rank: the same teacher exactly
    assert record["metrics"]["teacher_acc_per_seed"] == single["metrics"]["teacher_acc_per_seed"]
    for arm in ("twd", "meom"):
        mine, ref = record["metrics"]["arms"][arm], single["metrics"]["arms"][arm]
        assert mine["final_train_loss_mean"] == pytest.approx(ref["final_train_loss_mean"], abs=LOSS_TOLERANCE), arm
