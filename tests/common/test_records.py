"""Run records: atomic writes, JSON conversion, reading the latest record back."""

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch

from iclr26.common.records import jsonable, latest_record, new_run_dir, read_record, write_json_atomic


def test_jsonable_converts_arrays_and_non_finite_floats():
    value = {"a": np.float32(1.5), "b": torch.tensor([1.0, 2.0]), "c": (1, float("nan")), "d": -math.inf}
    assert jsonable(value) == {"a": 1.5, "b": [1.0, 2.0], "c": [1, "nan"], "d": "-inf"}
    with pytest.raises(TypeError, match="cannot write a value of type object"):
        jsonable({"x": object()})


def test_atomic_write_replaces_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "result.json"
    write_json_atomic(path, {"v": 1})
    write_json_atomic(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
    assert path.stat().st_mode & 0o777 == 0o644


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "result.json"
    write_json_atomic(path, {"v": 1})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"v": object()})
    assert json.loads(path.read_text()) == {"v": 1}


def test_killed_writer_leaves_no_partial_record(tmp_path):
    """SIGKILL a process in the middle of writing a large record: result.json is absent or complete."""
    path = tmp_path / "result.json"
    script = textwrap.dedent(f"""
        import os, sys
        from iclr26.common import records
        def slow_fsync(fd):
            print("writing", flush=True)
            import time; time.sleep(30)
        records.os.fsync = slow_fsync
        records.write_json_atomic({str(path)!r}, {{"big": list(range(200000))}})
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not path.exists()  # never a half-written result.json (a stray *.tmp may stay)


def test_latest_record_skips_incomplete_runs(tmp_path):
    first = new_run_dir(tmp_path, "m")
    record = {
        "module": "m",
        "claim": "c",
        "claim_held": True,
        "metrics": {},
        "config": {},
        "scale": "smoke",
        "started_utc": "2026-01-01T00:00:00+00:00",
    }
    write_json_atomic(first / "result.json", record)
    time.sleep(0.001)
    new_run_dir(tmp_path, "m")  # a crashed run: folder without result.json
    latest = latest_record(tmp_path, "m", "smoke")
    assert latest is not None and latest.path == first and latest.claim_held
    assert latest_record(tmp_path, "other", "smoke") is None


def test_latest_record_is_per_scale(tmp_path):
    """A newer smoke record never replaces the latest cpu record (the bug this rule fixes)."""
    base = {"module": "m", "claim": "c", "metrics": {}, "config": {}, "started_utc": "2026-01-01T00:00:00+00:00"}
    cpu_dir = new_run_dir(tmp_path, "m")
    write_json_atomic(cpu_dir / "result.json", {**base, "scale": "cpu", "claim_held": True})
    time.sleep(0.001)
    smoke_dir = new_run_dir(tmp_path, "m")
    write_json_atomic(smoke_dir / "result.json", {**base, "scale": "smoke", "claim_held": False})
    assert latest_record(tmp_path, "m").path == cpu_dir  # default scale: cpu
    assert latest_record(tmp_path, "m", "smoke").path == smoke_dir
    assert latest_record(tmp_path, "m", None).path == smoke_dir  # any scale: the newest
    assert latest_record(tmp_path, "m", "gpu") is None


def test_deterministic_view_drops_only_timing_keys():
    from iclr26.common.records import deterministic_view

    record = {"metrics": {"a": 1}, "wall_time_s": 3.0, "started_utc": "x", "timings": {"t": 1}, "resumed_units": []}
    assert deterministic_view(record) == {"metrics": {"a": 1}}


def test_read_record_rejects_non_records(tmp_path):
    (tmp_path / "result.json").write_text('{"module": "m"}')
    with pytest.raises(ValueError, match="not a run record"):
        read_record(tmp_path)
    (tmp_path / "result.json").write_text("{oops")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_record(tmp_path)


def test_run_dirs_are_unique_and_sort_chronologically(tmp_path):
    dirs = [new_run_dir(tmp_path, "m") for _ in range(5)]
    assert len(set(dirs)) == 5
    assert sorted(d.name for d in dirs) == [d.name for d in dirs]
