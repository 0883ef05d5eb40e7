"""Shared test helpers: run the real `iclr26` CLI in a subprocess and read the record it wrote."""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

# Tiny models run fastest on one thread, and two threads on two busy cores are many times slower; the CLI
# subprocesses read the same setting from the environment.
os.environ.setdefault("ICLR26_THREADS", "1")
torch.set_num_threads(int(os.environ["ICLR26_THREADS"]))


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python -m iclr26 *args`` and return the completed process (never raises on a non-zero exit)."""
    return subprocess.run(
        [sys.executable, "-m", "iclr26", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def smoke_record(module: str, out: Path, *extra: str) -> dict[str, Any]:
    """Run ``iclr26 run MODULE --scale smoke`` into ``out`` and return its ``result.json`` as a dict.

    Fails the test (with the command's stderr) if the run exits non-zero or writes no record.
    """
    proc = run_cli("run", module, "--scale", "smoke", "--out", str(out), "--quiet", *extra)
    assert proc.returncode == 0, f"smoke run of {module} failed:\n{proc.stdout}\n{proc.stderr}"
    records = sorted((out / module).glob("*/result.json"))
    assert len(records) == 1, f"expected one record under {out / module}, found {records}"
    return json.loads(records[0].read_text())


def dist_env(timeout_s: float = 60, **extra: str) -> dict[str, str]:
    """The environment of a test's launch: one thread per process, a collective timeout of ``timeout_s`` seconds
    (``ICLR26_DIST_TIMEOUT_S``), ``extra`` variables, and no ``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` inherited from
    an outer launch."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ICLR26_THREADS": "1", "ICLR26_DIST_TIMEOUT_S": str(timeout_s)}
    env.update(extra)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    return env


#: ``torchrun --standalone`` (a free port on this machine), checking the ranks' health every 0.2 s.
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--monitor-interval=0.2"]


def torchrun(
    *args: str, nproc: int = 2, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``torchrun --nproc_per_node=NPROC ARGS`` on the CPU (gloo), never raising on a non-zero exit.

    ``env`` defaults to :func:`dist_env`; ``timeout`` bounds the whole launch (a hang fails the test, not CI).
    """
    return subprocess.run(
        [*TORCHRUN, f"--nproc_per_node={nproc}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dist_env() if env is None else env,
        check=False,
    )


def smoke_two_ranks_and_one(module: str, tmp_path: Path, *extra: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The smoke of ``module`` under ``torchrun`` with 2 ranks and in one process (``extra`` for both).

    Checks that the 2-rank launch succeeds and writes exactly one record, with ``world_size`` 2 (only rank 0
    writes), and that the one-process record has ``world_size`` 1. Returns the two records (2 ranks, 1 process).
    """
    out = tmp_path / "two"
    two = torchrun("-m", "iclr26", "run", module, "--scale", "smoke", "--quiet", "--out", str(out), *extra)
    assert two.returncode == 0, two.stderr
    (record_file,) = (out / module).glob("*/result.json")
    assert [p.name for p in (out / module).iterdir()] == [record_file.parent.name]
    record = json.loads(record_file.read_text())
    assert record["world_size"] == 2
    single = smoke_record(module, tmp_path / "one", *extra)
    assert single["world_size"] == 1
    return record, single


def readme_example(module: str) -> dict[str, Any]:
    """Execute the module README's "Using it" example (the first ``python`` block after ``### Using it``) as written.

    Returns the namespace it leaves, for the test to check its variables (its printed output goes to ``capsys``).
    """
    readme = Path(__file__).resolve().parents[1] / "src" / "iclr26" / module / "README.md"
    text = readme.read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text[text.index("### Using it") :], re.DOTALL)
    assert block is not None, f"{readme} has no python block after '### Using it'"
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), str(readme), "exec"), namespace)  # noqa: S102 - the README's own example
    return namespace


def all_finite(value: Any) -> bool:
    """True if every number nested in ``value`` is finite (records write non-finite floats as strings)."""
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(all_finite(v) for v in value)
    if isinstance(value, str):
        return value not in ("nan", "inf", "-inf")
    if isinstance(value, float):
        return math.isfinite(value)
    return True


@pytest.fixture
def cli():
    """The :func:`run_cli` helper: ``cli("run", "seesaw", "--scale", "smoke", ...)``."""
    return run_cli


@pytest.fixture(scope="session")
def smoke_cache(tmp_path_factory) -> Path:
    """A folder shared by every pytest-xdist worker of this session, for the plain smoke records."""
    return tmp_path_factory.getbasetemp().parent / "shared-smoke"


def shared_smoke_record(module: str, cache: Path) -> tuple[dict[str, Any], Path]:
    """The record (and records folder) of ``iclr26 run MODULE --scale smoke`` with no options, run once per test
    session: the first worker to ask runs it through the CLI, the others wait for it and read it back. For tests that
    only read the record."""
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / module
    with (cache / f"{module}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one run per module; the other workers wait here, then read it
        try:
            if not (out / "done").is_file():
                shutil.rmtree(out, ignore_errors=True)
                smoke_record(module, out)
                (out / "done").write_text("ok")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    (record,) = (out / module).glob("*/result.json")
    return json.loads(record.read_text()), out


@pytest.fixture
def smoke(tmp_path, smoke_cache):
    """Run a module's smoke reproduction through the CLI; returns its record after checking it.

    Usage: ``record = smoke("seesaw")`` or ``smoke("seesaw", "--set", "steps=3", finite=False)``. Checks: exit
    status 0, exactly one ``result.json``, every metric finite (unless ``finite=False``), every plot written. The
    plain smoke (no options) runs once per test session and is shared by every test that asks for it.
    """

    def _smoke(module: str, *extra: str, finite: bool = True) -> dict[str, Any]:
        if extra:
            out = tmp_path / "runs"
            record = smoke_record(module, out, *extra)
        else:
            record, out = shared_smoke_record(module, smoke_cache)
        if finite:
            assert all_finite(record["metrics"]), f"non-finite metric in {record['metrics']}"
        run_dir = next((out / module).iterdir())
        for name in record["plots"]:
            assert (run_dir / name).stat().st_size > 0, f"plot {name} missing or empty"
        return record

    return _smoke


@pytest.fixture
def smoke_into():
    """The :func:`smoke_record` helper: ``smoke_into("seesaw", out_dir, *extra) -> record``."""
    return smoke_record
