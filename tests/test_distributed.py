"""Data parallelism under torchrun (``iclr26.common.distributed`` and the runner), on the CPU with gloo.

The multi-process tests start ``python -m torch.distributed.run --nproc_per_node=2 --standalone`` themselves. The
runner's guarantees are checked with a stand-in reproduction (``SCRIPT`` below: two units, both collective, and a
plot) registered as ``selfcheck`` in the launched processes, so that they cost seconds; the trainer's equivalence
(2 ranks vs 1 rank with 2 accumulation steps) runs the real ``kern`` smoke through the real CLI
(tests/common/test_lmtrain.py holds the trainer-level checks).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iclr26 import cli, runner
from iclr26.common.distributed import (
    DEFAULT_TIMEOUT_S,
    DistributedError,
    World,
    rank_seed,
    shard_range,
    timeout_s,
    world_from_env,
)
from iclr26.common.records import ERROR_FILE, INTERRUPTED_FILE, RESULT_FILE, RUN_FILE
from tests.conftest import torchrun

# The stand-in reproduction. On ranks other than 0 every function that writes a run's files raises, so a run that
# finishes proves that only rank 0 wrote. T_INTERRUPT stops the run after the first unit (as Ctrl-C would),
# T_FAIL=<rank> makes that rank raise inside the second unit, T_HANG=<rank> makes it hang there.
SCRIPT = r"""
import os, pathlib, sys, time

import torch.distributed as dist

from iclr26.common import distributed as D
from iclr26.common.experiment import Experiment, Outcome
from iclr26.common.plots import figure
from iclr26.selfcheck.experiment import SelfCheckConfig

RANK = D.world_from_env().rank


def gather(value):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def run(config, ctx):
    size = ctx.world.size
    shards = ctx.unit("shards", lambda: gather(list(D.shard_range(10, RANK, size))))
    if os.environ.get("T_INTERRUPT"):
        raise KeyboardInterrupt

    def second():
        if os.environ.get("T_FAIL") == str(RANK):
            raise RuntimeError(f"boom on rank {RANK}")
        if os.environ.get("T_HANG") == str(RANK):
            time.sleep(600)
        return D.all_reduce_sum([RANK + 1.0])[0]

    total = ctx.unit("sum", second)
    fig, ax = figure()
    ax.plot([0, 1])
    ctx.save_plot(fig, "p.png")
    return Outcome(
        metrics={"shards": shards, "sum": total, "shards_on_every_rank": gather(shards), "world": ctx.world.size},
        claim_held="held",
        evidence={},
        measurement="stand-in",
    )


if RANK != 0:
    import iclr26.common.experiment as E
    import iclr26.runner as R

    def forbid(name):
        def refuse(*args, **kwargs):
            raise AssertionError(f"rank {RANK} called {name}")
        return refuse

    R.write_json_atomic, R.prepare_run_dir, R.savefig = (forbid(n) for n in ("write_json", "prepare", "savefig"))
    E._write_pickle_atomic = forbid("write_unit")
    pathlib.Path.write_text = forbid("write_text")
    pathlib.Path.unlink = forbid("unlink")

import iclr26.selfcheck.experiment as registered

registered.EXPERIMENT = Experiment(config_cls=SelfCheckConfig, run=run, data_parallel=True)
from iclr26.cli import main

raise SystemExit(main(sys.argv[1:]))
"""


@pytest.fixture
def stand_in(tmp_path) -> Path:
    path = tmp_path / "stand_in.py"
    path.write_text(SCRIPT)
    return path


# -- the world, seeds and shards, in one process ------------------------------------------------------------------


def test_world_comes_from_torchrun_variables_and_bad_ones_are_named():
    assert world_from_env({}) == World(0, 1, 0) and not world_from_env({}).is_distributed
    world = world_from_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
    assert (world.rank, world.size, world.local_rank, world.is_main, world.is_distributed) == (3, 4, 1, False, True)
    with pytest.raises(DistributedError, match="variable RANK must be a non-negative integer"):
        world_from_env({"WORLD_SIZE": "2", "RANK": "x"})
    with pytest.raises(DistributedError, match="need 0 <= RANK < WORLD_SIZE"):
        world_from_env({"WORLD_SIZE": "2", "RANK": "2"})
    assert timeout_s({}) == 600.0 and timeout_s({"ICLR26_DIST_TIMEOUT_S": "2.5"}) == 2.5
    with pytest.raises(DistributedError, match="ICLR26_DIST_TIMEOUT_S must be a positive number"):
        timeout_s({"ICLR26_DIST_TIMEOUT_S": "0"})


def test_shards_are_disjoint_contiguous_and_cover_the_batch():
    # 5 items on 2 ranks: divmod(5, 2) = (2, 1), so rank 0 takes 2 + 1 = 3 items, rank 1 the remaining 2.
    assert [list(shard_range(5, r, 2)) for r in range(2)] == [[0, 1, 2], [3, 4]]
    for n in range(0, 12):
        for size in (1, 2, 3, 5):
            shards = [list(shard_range(n, r, size)) for r in range(size)]
            assert sum(shards, []) == list(range(n))  # disjoint, in order, covering everything
            assert max(map(len, shards)) - min(map(len, shards)) <= 1
    with pytest.raises(ValueError, match="rank must lie in"):
        shard_range(4, 2, 2)


def test_rank_seeds_differ_by_rank_and_follow_the_master_seed():
    seeds = [rank_seed(7, r) for r in range(4)]
    assert len(set(seeds)) == 4 and seeds == [rank_seed(7, r) for r in range(4)]
    assert rank_seed(8, 0) != rank_seed(7, 0)


def test_a_module_without_data_parallel_support_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    assert cli.main(["run", "rlaf", "--scale", "smoke", "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "[rank 0/2] error: rlaf does not support data parallelism yet" in err
    assert "Modules that support torchrun: " in err and "the others are not yet supported" in err
    assert list(tmp_path.iterdir()) == []
    assert cli.main(["run", "all", "--scale", "smoke", "--out", str(tmp_path)]) == 2
    assert "not 'all'" in capsys.readouterr().err
    one_gpu = dataclasses.replace(runner.build_config("kern", "smoke", None, []), device="cuda:1")
    with pytest.raises(DistributedError, match="every rank on one GPU"):
        runner.check_data_parallel("kern", World(0, 2, 0), one_gpu)


# -- real processes under torchrun ---------------------------------------------------------------------------------


@pytest.mark.slow  # ~15 s for three interpreters; the in-process test above covers the same code path
def test_torchrun_refuses_a_module_without_support_with_exit_2(tmp_path):
    proc = torchrun("-m", "iclr26", "run", "rlaf", "--scale", "smoke", "--out", str(tmp_path), "--quiet")
    assert proc.returncode != 0
    assert "exitcode  : 2" in proc.stderr, proc.stderr
    for rank in (0, 1):
        assert f"[rank {rank}/2] error: rlaf does not support data parallelism yet" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_interrupted_run_resumes_under_torchrun_and_only_rank_0_writes(stand_in, tmp_path):
    out = tmp_path / "runs"
    args = (str(stand_in), "run", "selfcheck", "--scale", "smoke", "--quiet")
    first = torchrun(*args, "--out", str(out), env={"T_INTERRUPT": "1"})
    assert first.returncode != 0 and "exitcode  : 130" in first.stderr, first.stderr
    (run_dir,) = (out / "selfcheck").iterdir()  # one folder, created by rank 0 for both ranks
    assert (run_dir / RUN_FILE).is_file()
    assert (
        f"torchrun --nproc_per_node=2 -m iclr26 run selfcheck --resume {run_dir}"
        in (run_dir / INTERRUPTED_FILE).read_text()
    )
    assert [p.name for p in (run_dir / "units").iterdir()] == ["shards.pkl"]

    second = torchrun(*args, "--resume", str(run_dir))
    assert second.returncode == 0, second.stderr  # rank 1 would have failed on any write
    assert sorted(p.name for p in run_dir.iterdir()) == ["p.png", RESULT_FILE, RUN_FILE]
    record = json.loads((run_dir / RESULT_FILE).read_text())
    assert record["world_size"] == 2 and record["metrics"]["world"] == 2
    assert record["units"] == ["shards", "sum"] and record["resumed_units"] == ["shards"]
    shards = record["metrics"]["shards"]  # rank r's shard of range(10), gathered in the first launch
    assert shards == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert record["metrics"]["shards_on_every_rank"] == [shards, shards]  # both ranks read the unit back
    assert record["metrics"]["sum"] == 3.0  # all-reduce of rank + 1 over ranks 0 and 1
    assert second.stdout.count("record:") == 1  # rank 0 reports


@pytest.mark.parametrize(
    ("env", "who", "message"),
    [
        ({"T_FAIL": "1"}, 1, "failed: RuntimeError: boom on rank 1"),
        ({"T_HANG": "1", "ICLR26_DIST_TIMEOUT_S": "3"}, 0, "a collective failed: another rank stopped or hung"),
    ],
    ids=["a-rank-raises", "a-rank-hangs"],
)
def test_a_failing_rank_ends_the_run_with_a_clear_error_within_the_timeout(stand_in, tmp_path, env, who, message):
    out = tmp_path / "runs"
    t0 = time.monotonic()
    proc = torchrun(str(stand_in), "run", "selfcheck", "--scale", "smoke", "--quiet", "--out", str(out), env=env)
    elapsed = time.monotonic() - t0
    # A hang would last the default timeout (600 s); a clear failure comes within seconds on an idle machine and
    # within a minute under heavy load (36 s measured with the load average at 9 on 2 cores).
    assert proc.returncode != 0 and elapsed < DEFAULT_TIMEOUT_S / 4, (elapsed, proc.stderr)
    assert f"[rank {who}/2] {message}" in proc.stderr, proc.stderr
    (run_dir,) = (out / "selfcheck").iterdir()
    assert not (run_dir / RESULT_FILE).exists()
    if who == 0:  # rank 0 waited for the hung rank until the timeout, then failed and kept the traceback
        assert "timed out" in proc.stderr.lower() or "timeout" in proc.stderr.lower()
        assert (run_dir / ERROR_FILE).is_file()


def _losses(value, path=""):
    """Every number under a key naming a loss in a record's metrics: {path: value}."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _losses(item, f"{path}/{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _losses(item, f"{path}[{i}]").items()}
    return {path: value} if "loss" in path and isinstance(value, float) else {}


# Tolerance of the losses in a record, 2 ranks vs 1 rank with 2 accumulation steps (float32 training): the two sum
# the same per-sequence gradients in another order (all-reduce of two halves vs accumulation), which moves a loss
# by ~1e-7 after the smoke's 16 steps (3e-7 measured); a changed batch row moves it by ~1e-3.
LOSS_TOLERANCE = 1e-5


@pytest.mark.parametrize(
    "module",
    ["kern", pytest.param("seesaw", marks=pytest.mark.slow)],
)
def test_smoke_under_torchrun_writes_one_record_with_the_single_process_losses(module, tmp_path):
    small = {
        "kern": ["--set", "n_seeds=1", "--set", "peak_lrs=3e-3", "--set", "routers=softmax,kern"],
        "seesaw": ["--set", "peak_lrs=3e-3"],
    }[module]
    two = torchrun("-m", "iclr26", "run", module, "--scale", "smoke", "--quiet", "--out", str(tmp_path / "two"), *small)
    assert two.returncode == 0, two.stderr
    (record_file,) = (tmp_path / "two" / module).glob("*/result.json")
    assert [p.name for p in (tmp_path / "two" / module).iterdir()] == [record_file.parent.name]
    record = json.loads(record_file.read_text())
    assert record["world_size"] == 2
    micro = record["config"]["micro_batch_size"]  # smoke: every global batch fits one micro-batch

    one_process = [sys.executable, "-m", "iclr26", "run", module, "--scale", "smoke", "--quiet"]
    half = ["--set", f"micro_batch_size={micro // 2}"]  # 1 rank, 2 accumulation steps over the same global batch
    proc = subprocess.run(
        [*one_process, "--out", str(tmp_path / "one"), *small, *half], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    (single_file,) = (tmp_path / "one" / module).glob("*/result.json")
    single = json.loads(single_file.read_text())
    assert single["world_size"] == 1
    losses, reference = _losses(record["metrics"]), _losses(single["metrics"])
    assert losses.keys() == reference.keys() and len(losses) >= 3, sorted(reference)
    for key, value in reference.items():
        assert losses[key] == pytest.approx(value, abs=LOSS_TOLERANCE), key
