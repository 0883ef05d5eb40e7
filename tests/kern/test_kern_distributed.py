"""kern under torchrun reduces its training load statistics over the ranks.

Each rank's ``load_counts`` count its shard of every batch (``common/lmtrain``); :func:`~iclr26.kern.experiment.
reduce_load` sums them, so the 2-rank record's ``train_load`` statistics equal those of one process with the same
global batch (2 accumulation steps), as its losses do (tests/test_distributed.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from iclr26.kern.experiment import reduce_load
from tests.conftest import torchrun

# Losses: the tolerance of tests/test_distributed.py (the same per-sequence gradients summed in another order move a
# loss by ~1e-7 after the smoke's steps). Load counts are integers and came out equal (CV equal to the last bit); a
# near-tie routed the other way by float summation order would move the CV of ~4k assignments by ~1e-4, so the CV
# tolerance admits a few such flips while it fails the unreduced counts (rank 0's shard only: CV off by 0.008).
LOSS_TOLERANCE = 1e-5
CV_TOLERANCE = 1e-3


def test_reducing_load_without_a_process_group_keeps_the_counts_per_layer():
    assert reduce_load([[3, 0, 5], [1, 1, 6]]) == [[3, 0, 5], [1, 1, 6]]
    assert reduce_load([]) == []


@pytest.mark.slow  # 115 s on the loaded 2-core machine: the smoke reproduction twice, once under torchrun
def test_two_rank_load_statistics_equal_one_process_with_the_same_global_batch(tmp_path):
    small = ["--set", "n_seeds=1", "--set", "peak_lrs=3e-3", "--set", "routers=softmax,kern"]
    two = torchrun("-m", "iclr26", "run", "kern", "--scale", "smoke", "--quiet", "--out", str(tmp_path / "two"), *small)
    assert two.returncode == 0, two.stderr
    (record_file,) = (tmp_path / "two" / "kern").glob("*/result.json")
    record = json.loads(record_file.read_text())
    assert record["world_size"] == 2
    micro = record["config"]["micro_batch_size"]
    one = subprocess.run(
        [sys.executable, "-m", "iclr26", "run", "kern", "--scale", "smoke", "--quiet", "--out", str(tmp_path / "one"),
         *small, "--set", f"micro_batch_size={micro // 2}"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    (single_file,) = (tmp_path / "one" / "kern").glob("*/result.json")
    single = json.loads(single_file.read_text())
    for router in ("softmax", "kern"):
        mine, ref = record["metrics"]["per_router"][router], single["metrics"]["per_router"][router]
        assert mine["train_load_cv_mean"] == pytest.approx(ref["train_load_cv_mean"], abs=CV_TOLERANCE), router
        assert mine["final_val_loss_mean"] == pytest.approx(ref["final_val_loss_mean"], abs=LOSS_TOLERANCE), router
