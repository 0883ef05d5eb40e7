"""The runner's guarantees: checks before any work, the record before the plots, Ctrl-C, resume errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from iclr26 import cli, runner
from iclr26.common.corpus import load_corpus
from iclr26.common.experiment import RunContext, UnitError, check_units
from iclr26.common.records import INTERRUPTED_FILE, RESULT_FILE, RUN_FILE


@pytest.mark.parametrize(
    ("make_out", "message"),
    [
        (lambda tmp: tmp / "file", "is a file, not a folder"),
        (lambda tmp: tmp / ("a" * 300), "its path is too long for the file system"),
        (lambda tmp: tmp / "file" / "below", "a part of its path is a file"),
        (lambda tmp: "/proc/iclr26-runs", "cannot be created there"),  # not writable even for root
    ],
)
def test_unwritable_out_is_one_clear_error_and_writes_nothing(make_out, message, tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")
    out = make_out(tmp_path)
    assert cli.main(["run", "selfcheck", "--scale", "smoke", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out '{out}'") and message in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_probe_takes_the_longest_name_a_run_writes(tmp_path):
    run_dir = runner.prepare_run_dir(tmp_path / "ok", "selfcheck")
    assert run_dir.is_dir() and list(run_dir.iterdir()) == []  # the probe is removed
    # An --out whose path leaves room for the run folder (~40 characters more) but not for a unit file
    # (units/ + 68 characters): refused up front, although the run folder itself could be created.
    budget = 4096 - 40 - 20 - len(str(tmp_path))  # PATH_MAX on Linux is 4096
    parts = [("p" * 200)] * (budget // 201) + ["q" * (budget % 201)]
    deep = tmp_path.joinpath(*[p for p in parts if p])
    deep.mkdir(parents=True)
    with pytest.raises(runner.OutputError, match="too long"):
        runner.prepare_run_dir(deep, "selfcheck")
    assert list(deep.iterdir()) == []  # nothing left behind


def test_record_is_written_before_the_plots_and_a_failed_plot_is_noted(tmp_path, monkeypatch, capsys):
    seen = []

    def failing_savefig(fig, path):
        seen.append((path.name, (path.parent / RESULT_FILE).is_file()))
        raise OSError("disk full")

    monkeypatch.setattr(runner, "savefig", failing_savefig)
    assert cli.main(["run", "selfcheck", "--scale", "smoke", "--out", str(tmp_path), "--quiet"]) == 0
    assert seen == [("loss.png", True)]  # result.json existed when the plot was drawn
    (run_dir,) = (tmp_path / "selfcheck").iterdir()
    record = json.loads((run_dir / RESULT_FILE).read_text())
    assert record["plot_errors"] == {"loss.png": "OSError: disk full"} and record["metrics"]["steps"] > 0
    assert record["world_size"] == 1  # one process (tests/test_distributed.py: 2 under torchrun)
    assert "plot loss.png not saved: OSError: disk full" in capsys.readouterr().err


def test_ctrl_c_exits_130_with_one_line_and_marks_the_folder(tmp_path):
    out = tmp_path / "runs"
    command = ["iclr26", "run", "selfcheck", "--scale", "cpu", "--out", str(out), "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-m", *command],
        # a job started in the background by a non-interactive shell inherits SIGINT ignored, and Python then never
        # raises KeyboardInterrupt: restore the default so that the test checks the CLI, not how it was launched
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list(out.glob("selfcheck/*/" + RUN_FILE)) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # inside the training unit
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip().count("\n") == 0 and "interrupted (Ctrl-C)" in stderr
    (run_dir,) = (out / "selfcheck").iterdir()
    assert (run_dir / INTERRUPTED_FILE).is_file() and not (run_dir / RESULT_FILE).exists()
    assert f"iclr26 run selfcheck --resume {run_dir}" in (run_dir / INTERRUPTED_FILE).read_text()


def test_ctrl_c_inside_a_string_exec_still_exits_130_under_python_m(tmp_path):
    # CPython kills a `python -m` process with SIGINT at exit after a KeyboardInterrupt ended a string exec, even a
    # caught one, unless the CLI clears that; here the interrupt is raised inside one, deterministically
    (tmp_path / "interrupting.py").write_text(
        "import sys\n"
        "from iclr26 import cli, runner\n"
        "runner.seed_everything = lambda seed: exec('raise KeyboardInterrupt')\n"
        "raise SystemExit(cli.main(sys.argv[1:]))\n"
    )
    command = ["run", "selfcheck", "--scale", "smoke", "--out", str(tmp_path / "runs"), "--quiet"]
    proc = subprocess.run(
        [sys.executable, "-m", "interrupting", *command], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip() == "interrupted (Ctrl-C); nothing was left to resume"


def test_resume_refuses_what_it_cannot_continue(tmp_path, capsys):
    assert cli.main(["run", "selfcheck", "--scale", "smoke", "--out", str(tmp_path), "--quiet"]) == 0
    (done,) = (tmp_path / "selfcheck").iterdir()
    capsys.readouterr()
    for module, folder, message in [
        ("selfcheck", done, "that run finished (it has result.json); nothing to resume"),
        ("selfcheck", tmp_path, "no run.json there"),
        ("seesaw", done, "is a run of selfcheck, not seesaw"),
    ]:
        if module == "seesaw":
            (done / RESULT_FILE).rename(done / "kept.json")
        assert cli.main(["run", module, "--resume", str(folder), "--quiet"]) == 2
        assert message in capsys.readouterr().err
    (done / RUN_FILE).write_text("{oops")
    assert cli.main(["run", "selfcheck", "--resume", str(done), "--quiet"]) == 2
    assert "run.json is damaged" in capsys.readouterr().err


def test_resume_keeps_the_original_config(tmp_path, monkeypatch):
    """A run started with --set and --seed resumes with them (from run.json), not with the preset's values."""

    def interrupt(self, key, compute):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(RunContext, "unit", interrupt)
        argv = ["run", "selfcheck", "--scale", "smoke", "--seed", "5", "--set", "lr=0.002", "--quiet"]
        assert cli.main([*argv, "--out", str(tmp_path)]) == 130
    (run_dir,) = (tmp_path / "selfcheck").iterdir()
    assert cli.main(["run", "selfcheck", "--resume", str(run_dir), "--quiet"]) == 0
    record = json.loads((run_dir / RESULT_FILE).read_text())
    assert record["seed"] == 5 and record["config"]["lr"] == 0.002 and record["scale"] == "smoke"


def test_unit_keys_are_checked(tmp_path):
    ctx = RunContext(out_dir=tmp_path, seed=0)
    assert ctx.unit("a-1", lambda: {"x": 1}) == {"x": 1}
    with pytest.raises(ValueError, match="used twice"):
        ctx.unit("a-1", lambda: 2)
    with pytest.raises(ValueError, match="letters, digits"):
        ctx.unit("a/b", lambda: 2)
    with pytest.raises(ValueError, match="at most 64 characters"):
        ctx.unit("k" * 65, lambda: 2)
    # a second context on the same folder reads the unit back without computing it
    again = RunContext(out_dir=tmp_path, seed=0)
    assert again.unit("a-1", lambda: pytest.fail("recomputed")) == {"x": 1} and again.resumed_units == ["a-1"]


def test_units_reseed_the_global_generators(tmp_path):
    """A skipped unit must not shift the random draws after it: both paths leave the same global RNG state."""
    import torch

    fresh = RunContext(out_dir=tmp_path / "a", seed=7)
    fresh.unit("u", lambda: torch.rand(3).tolist())
    after_fresh = torch.rand(2)
    (tmp_path / "b" / "units").mkdir(parents=True)
    (tmp_path / "a" / "units" / "u.pkl").rename(tmp_path / "b" / "units" / "u.pkl")
    resumed = RunContext(out_dir=tmp_path / "b", seed=7)
    torch.manual_seed(12345)  # whatever state the run was in
    resumed.unit("u", lambda: pytest.fail("recomputed"))
    assert torch.equal(torch.rand(2), after_fresh)


def test_a_damaged_corpus_cache_is_rebuilt_with_a_warning(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("hello world, some text to split. " * 20)
    cache = tmp_path / "cache"
    first = load_corpus(text, cache=cache)
    (entry,) = cache.iterdir()
    (entry / "train.u8").write_bytes(b"\x00\x01")  # truncated
    with pytest.warns(UserWarning, match=f"corpus cache entry {entry} is damaged"):
        again = load_corpus(text, cache=cache)
    assert (again.train == first.train).all() and (again.val == first.val).all()
    (entry / "meta.json").write_text("{not json")
    with pytest.warns(UserWarning, match="cannot be read"):
        load_corpus(text, cache=cache)
    assert len(load_corpus(text, cache=cache).train) == len(first.train)  # rebuilt entry is read quietly


def _ctx(tmp_path, digest="cfg-a"):
    return RunContext(out_dir=tmp_path, seed=0, quiet=True, config_digest=digest)


def test_units_are_stored_with_their_key_and_config_and_checked_on_the_way_back(tmp_path):
    ctx = _ctx(tmp_path)
    ctx.unit("alpha", lambda: 1)
    ctx.unit("beta", lambda: 2)
    units = tmp_path / "units"
    assert check_units(tmp_path, "cfg-a") == ["alpha", "beta"]
    with pytest.raises(UnitError, match="was written by a run of another config"):
        check_units(tmp_path, "cfg-b")
    # two valid units swapped: each file holds the other's key
    a, b = (units / "alpha.pkl").read_bytes(), (units / "beta.pkl").read_bytes()
    (units / "alpha.pkl").write_bytes(b)
    (units / "beta.pkl").write_bytes(a)
    with pytest.raises(UnitError, match=r"alpha\.pkl holds unit 'beta', not 'alpha' \(files swapped\?\)"):
        check_units(tmp_path, "cfg-a")
    for damage in (a[: len(a) // 2], b"", bytes(range(256))):
        (units / "alpha.pkl").write_bytes(damage)
        with pytest.raises(UnitError, match=r"alpha\.pkl is damaged .*; delete .*alpha\.pkl and resume again"):
            _ctx(tmp_path).unit("alpha", lambda: 1)


def _interrupted_selfcheck(tmp_path, monkeypatch, *, pause=0.0):
    def interrupt(self, key, compute):
        time.sleep(pause)
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(RunContext, "unit", interrupt)
        assert cli.main(["run", "selfcheck", "--scale", "smoke", "--out", str(tmp_path), "--quiet"]) == 130
    (run_dir,) = (tmp_path / "selfcheck").iterdir()
    return run_dir


def test_a_damaged_or_foreign_unit_stops_the_resume_before_any_work(tmp_path, monkeypatch, capsys):
    run_dir = _interrupted_selfcheck(tmp_path, monkeypatch)
    (run_dir / "units").mkdir()
    (run_dir / "units" / "train.pkl").write_bytes(b"\x80\x05truncated")
    capsys.readouterr()
    assert cli.main(["run", "selfcheck", "--resume", str(run_dir), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "train.pkl is damaged" in err and "resume again" in err
    assert not (run_dir / RESULT_FILE).exists()


@pytest.mark.parametrize("text", ["[]", '"hello"', '{"module": "selfcheck", "scale": "big", "config": {}}'])
def test_a_malformed_run_json_is_one_line(tmp_path, monkeypatch, capsys, text):
    run_dir = _interrupted_selfcheck(tmp_path, monkeypatch)
    (run_dir / RUN_FILE).write_text(text)
    capsys.readouterr()
    assert cli.main(["run", "selfcheck", "--resume", str(run_dir), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run.json is damaged" in err


def test_one_folder_is_resumed_by_one_process_at_a_time(tmp_path, monkeypatch, capsys):
    run_dir = _interrupted_selfcheck(tmp_path, monkeypatch)
    capsys.readouterr()
    with runner.RunLock(run_dir):  # another process holds the folder
        assert cli.main(["run", "selfcheck", "--resume", str(run_dir), "--quiet"]) == 2
    assert "is being run or resumed by another process" in capsys.readouterr().err
    assert cli.main(["run", "selfcheck", "--resume", str(run_dir), "--quiet"]) == 0


def test_a_resumed_record_counts_the_time_of_every_leg(tmp_path, monkeypatch):
    run_dir = _interrupted_selfcheck(tmp_path, monkeypatch, pause=1.0)
    assert json.loads((run_dir / "elapsed.json").read_text())["wall_s"] >= 1.0
    assert cli.main(["run", "selfcheck", "--resume", str(run_dir), "--quiet"]) == 0
    record = json.loads((run_dir / RESULT_FILE).read_text())
    assert record["legs"] == 2 and record["wall_time_s"] >= 1.0
    assert not (run_dir / "elapsed.json").exists() and not (run_dir / ".lock").exists()


def test_sigterm_stops_a_run_as_ctrl_c_does_and_names_the_resume_command(tmp_path, monkeypatch, capsys):
    def terminate(self, key, compute):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends

    with monkeypatch.context() as patch:
        patch.setattr(RunContext, "unit", terminate)
        assert cli.main(["run", "selfcheck", "--scale", "smoke", "--out", str(tmp_path), "--quiet"]) == 143
    (run_dir,) = (tmp_path / "selfcheck").iterdir()
    err = capsys.readouterr().err
    assert f"terminated (SIGTERM); continue with: iclr26 run selfcheck --resume {run_dir}" in err
    assert (run_dir / INTERRUPTED_FILE).is_file()
    assert signal.getsignal(signal.SIGTERM) is not cli._on_sigterm  # the CLI restores the previous handler


def test_a_record_that_cannot_be_written_keeps_the_measurement(tmp_path, monkeypatch, capsys):
    real = runner.write_json_atomic

    def refuse_result(path, data):
        if path.name == RESULT_FILE:
            raise PermissionError(13, "Permission denied")
        return real(path, data)

    monkeypatch.setattr(runner, "write_json_atomic", refuse_result)
    assert cli.main(["run", "selfcheck", "--scale", "smoke", "--out", str(tmp_path), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "could not write" in err and "held: val loss" in err
    (run_dir,) = (tmp_path / "selfcheck").iterdir()
    kept = (run_dir / "error.txt").read_text()
    assert "result.json could not be written" in kept and '"claim_held": "held"' in kept


def test_list_and_report_name_a_bad_out(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    for argv, message in [
        (["list", "--out", str(tmp_path / "missing")], "does not exist"),
        (["list", "--out", str(tmp_path / "file")], "is a file, not a folder of run records"),
        (["report", "--out", "/proc/iclr26-report"], "report.md cannot be written"),
        (["run", "all", "--seed", "-1"], "--seed must be an integer from 0 to"),
    ]:
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err
