"""The `iclr26` command end to end: list, run (the built-in selfcheck), report, bad input."""

import json
import os
import signal
import sys
import time

from iclr26 import cli, runall
from iclr26.catalog import PAPERS, SELFCHECK, is_implemented, paper


def test_catalog_lists_the_19_papers_in_order():
    modules = [p.module for p in PAPERS]
    assert modules == [
        "lamir",
        "rgvfm",
        "hicra",
        "dexploration",
        "zoprox",
        "dna",
        "seesaw",
        "unisplat",
        "eog",
        "page4d",
        "rlaf",
        "uvu",
        "nextstep",
        "kern",
        "biasfree",
        "sthhol",
        "magref",
        "meom",
        "guishift",
    ]
    assert [p.number for p in PAPERS] == list(range(1, 20))
    assert all(p.claim and p.title for p in PAPERS)
    assert is_implemented("selfcheck") and paper("selfcheck") is SELFCHECK


def test_list_shows_all_papers(cli, tmp_path):
    proc = cli("list", "--out", str(tmp_path))
    assert proc.returncode == 0
    header, *lines = proc.stdout.strip().splitlines()[1:]
    assert proc.stdout.startswith(f"records read from {tmp_path.resolve()} (latest `cpu` record")
    assert len(lines) == 19 and lines[0].split()[:2] == ["1", "lamir"] and lines[-1].split()[:2] == ["19", "guishift"]
    assert all("never run" in line for line in lines)


def test_selfcheck_run_writes_a_complete_record_and_report(smoke, cli, tmp_path):
    record = smoke("selfcheck", "--seed", "3", "--set", "lr=0.004")
    assert record["module"] == "selfcheck" and record["scale"] == "smoke" and record["seed"] == 3
    assert record["verdict_meaningful"] is False and record["units"] == ["train"]
    assert record["config"]["lr"] == 0.004 and record["config"]["seed"] == 3
    assert record["claim_held"] == "held" and record["failed_gates"] == []
    assert record["evidence"]["final_val_loss"] < record["evidence"]["uniform_loss"]
    assert record["metrics"]["params_changed"] > 0 and record["plots"] == ["loss.png"]
    for key in ("package_version", "torch", "python", "wall_time_s", "started_utc", "git_commit", "claim", "timings"):
        assert key in record
    assert 0 < record["cpu_time_s"] < 10 * record["wall_time_s"]
    assert record["evidence"]["thresholds"]["uniform_loss"]["source"]
    out = tmp_path / "runs"
    proc = cli("report", "--out", str(out), "--scale", "smoke")
    assert proc.returncode == 0
    assert not (out / "report.md").exists()  # a smoke report never overwrites the cpu report
    report = (out / "report-smoke.md").read_text()
    assert report.count("\n| ") == 20  # header + 19 papers
    assert "0 of 19 papers have a `smoke` record" in report  # selfcheck is not a paper
    assert "its verdict is not meaningful" in report


def test_bad_set_values_are_rejected_before_anything_is_written(capsys, tmp_path):
    for args, message in [
        (["--set", "lr=fast"], "--set lr='fast': expected float"),
        (["--set", "nope=1"], "--set nope: unknown key"),
        (["--set", "batch_size=0"], "config field 'batch_size': must be >= 1, got 0"),
        (["--set", "batch_size=1e18"], "config field 'batch_size': must be <= 4096"),
        (["--set", "lr=inf"], "--set lr='inf': must be a finite number"),
        (["--set", "lr=nan"], "--set lr='nan': must be a finite number"),
        (["--threads", "-1"], "--threads must be an integer from 1 to"),
        (["--threads", "0"], "--threads must be an integer from 1 to"),
        (["--seed", "-1"], "--seed must be an integer from 0 to 9223372036854775807, got -1"),
        (["--seed", str(2**64)], "--seed must be an integer from 0 to"),
        (["--set", "data="], "--set data='': empty value; give a value, or 'none' for the default"),
        (["--set", "data=/no/such/file.txt"], "config field 'data': corpus path '/no/such/file.txt' does not exist"),
        (
            ["--seed", "1", "--resume", str(tmp_path)],
            "--resume continues a run with its own config; drop --set and --seed",
        ),
    ]:
        assert cli.main(["run", "selfcheck", "--out", str(tmp_path), *args]) == 2
        assert message in capsys.readouterr().err
    assert cli.main(["run", "nosuchpaper", "--out", str(tmp_path)]) == 2
    assert "unknown module 'nosuchpaper'" in capsys.readouterr().err
    assert not (tmp_path / "selfcheck").exists()


def test_bad_thread_variable_is_named(monkeypatch, capsys, tmp_path):
    cap = os.cpu_count()
    for value in ("abc", "-3", "0", "1.5", "99999"):
        monkeypatch.setenv("ICLR26_THREADS", value)
        assert cli.main(["run", "selfcheck", "--scale", "smoke", "--out", str(tmp_path)]) == 2
        expected = f"environment variable ICLR26_THREADS must be an integer from 1 to {cap} (this machine's cores)"
        assert f"{expected}, got '{value}'" in capsys.readouterr().err
    monkeypatch.delenv("ICLR26_THREADS")
    assert cli.main(["run", "selfcheck", "--threads", "100000", "--out", str(tmp_path)]) == 2
    assert f"--threads must be an integer from 1 to {cap}" in capsys.readouterr().err
    assert not (tmp_path / "selfcheck").exists()


def test_bad_user_data_is_rejected_before_any_folder(capsys, tmp_path):
    random_bytes = tmp_path / "random.bin"
    random_bytes.write_bytes(bytes(range(128, 256)) * 32)  # 4 KiB, not UTF-8
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("x" * 50)
    out = tmp_path / "runs"
    for data, message in [
        (random_bytes, "is not UTF-8 text (undecodable byte at offset 0)"),
        (empty, "the split left 0 training"),
        (tiny, "fewer than the 66 this config needs"),
    ]:
        assert cli.main(["run", "selfcheck", "--scale", "smoke", "--out", str(out), "--set", f"data={data}"]) == 2
        assert "config field 'data': " in (err := capsys.readouterr().err) and message in err, err
    assert not out.exists()


def test_help_config_lists_fields_defaults_and_presets(cli):
    proc = cli("run", "selfcheck", "--help-config")
    assert proc.returncode == 0 and "training budget in tokens" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.split()[:1] == ["total_tokens"])
    assert row.split()[1:5] == ["int", "204800", "20480", "/"] and row.split()[5] == "32768000"
    assert "aliases: corpus -> data" in proc.stdout


#: A stand-in for ``python -m iclr26``: fails for rgvfm, waits for Ctrl-C for "slow", finishes at once otherwise.
FAKE_PAPER = """
import sys, time
if "rgvfm" in sys.argv:
    sys.exit(1)
if "--slow" in sys.argv:
    try:
        open(sys.argv[sys.argv.index("--slow") + 1] + "/ready-" + sys.argv[2], "w").close()
        time.sleep(60)
    except KeyboardInterrupt:
        sys.exit(130)
"""


def test_run_all_goes_on_after_a_failing_paper(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(runall, "COMMAND", [sys.executable, "-c", FAKE_PAPER])
    monkeypatch.setattr(cli, "implemented", lambda: [paper("lamir"), paper("rgvfm"), paper("hicra")])
    status = cli.main(["run", "all", "--scale", "smoke", "--out", str(tmp_path), "--jobs", "2"])
    out = capsys.readouterr().out
    assert status == 1 and "ran 3 papers; failed: rgvfm" in out
    assert all(f"[{m}] started" in out for m in ("lamir", "rgvfm", "hicra"))
    assert "[rgvfm] FAILED (exit 1)" in out and "[lamir] finished" in out and "[hicra] finished" in out


def test_run_all_interrupted_stops_every_running_paper_and_starts_no_other(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(runall, "COMMAND", [sys.executable, "-c", FAKE_PAPER])

    def pause_then_ctrl_c():  # Ctrl-C once both running papers are at work
        if len(list(tmp_path.glob("ready-*"))) == 2:
            raise KeyboardInterrupt
        time.sleep(0.2)

    monkeypatch.setattr(runall, "pause", pause_then_ctrl_c)
    # started in the background, as `run all ... &` is: SIGINT ignored, which the papers would inherit
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        status = runall.run_all(
            ["lamir", "hicra", "kern"], ["--slow", str(tmp_path)], out=tmp_path, scale="smoke", jobs=2, threads=None
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    out = capsys.readouterr().out
    assert status == 130 and "[lamir] interrupted" in out and "[hicra] interrupted" in out
    assert "not started: kern" in out


def test_makespan_of_longest_first_scheduling():
    # 3, 3 start on the two workers; the three 2s go to whichever is free first: 3+2+2 = 7 and 3+2 = 5
    assert runall.makespan([2, 3, 2, 3, 2], 2) == 7
    assert runall.makespan([5, 1, 1], 4) == 5 and runall.makespan([], 2) == 0


def test_jobs_is_checked(capsys, tmp_path):
    assert cli.main(["run", "all", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert "--jobs must be an integer from 1 to" in capsys.readouterr().err
    assert cli.main(["run", "selfcheck", "--jobs", "2", "--out", str(tmp_path)]) == 2
    assert "--jobs goes with 'run all'" in capsys.readouterr().err


def _write_record(out, module, stamp, scale, held, measurement, wall_time_s=1.0):
    run_dir = out / module / stamp
    run_dir.mkdir(parents=True)
    record = {
        "module": module,
        "claim": "C",
        "claim_held": held,
        "metrics": {},
        "config": {},
        "scale": scale,
        "seed": 0,
        "started_utc": "2026-01-01T00:00:00+00:00",
        "wall_time_s": wall_time_s,
        "measurement": measurement,
        "evidence": {},
        "plots": [],
    }
    (run_dir / "result.json").write_text(json.dumps(record))


def test_a_smoke_run_changes_no_cpu_verdict(cli, tmp_path, monkeypatch):
    """The bug this fixes: one smoke run replaced every committed cpu verdict in list, report and READMEs."""
    from iclr26 import report

    out = tmp_path / "runs"
    _write_record(out, "seesaw", "2026-01-01T00-00-00.000000Z", "cpu", True, "cpu gap 0.01")
    _write_record(out, "seesaw", "2026-01-02T00-00-00.000000Z", "smoke", False, "smoke nonsense")
    listing = cli("list", "--out", str(out)).stdout
    assert "held (cpu, 2026-01-01)" in next(line for line in listing.splitlines() if " seesaw " in line)
    assert "smoke (smoke, 2026-01-01)" in cli("list", "--out", str(out), "--scale", "smoke").stdout
    assert cli("report", "--out", str(out)).returncode == 0
    text = (out / "report.md").read_text()
    assert "cpu gap 0.01" in text and "smoke nonsense" not in text and "| held | cpu |" in text
    assert cli("report", "--out", str(out), "--scale", "smoke").returncode == 0
    assert "cpu gap 0.01" in (out / "report.md").read_text()  # the cpu report stays as it was
    text = (out / "report-smoke.md").read_text()
    assert "smoke nonsense" in text and "| smoke | smoke |" in text and "NOT" not in text

    src = tmp_path / "src"
    (src / "seesaw").mkdir(parents=True)
    (src / "seesaw" / "README.md").write_text(f"{report.BEGIN}\nold\n{report.END}\n")
    assert report.refresh_readme(paper("seesaw"), out, src)
    assert "cpu gap 0.01" in (src / "seesaw" / "README.md").read_text()


def test_list_into_a_closed_pipe_exits_quietly(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run(
        f"{sys.executable} -m iclr26 list --out {tmp_path} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("records read from") and proc.stderr == ""


def test_report_refreshes_readme_blocks(tmp_path, monkeypatch):
    from iclr26 import report

    src = tmp_path / "src"
    (src / "seesaw").mkdir(parents=True)
    readme = src / "seesaw" / "README.md"
    readme.write_text(f"# Seesaw\n\n{report.BEGIN}\nold\n{report.END}\n\nprose\n")
    run_dir = tmp_path / "runs" / "seesaw" / "2026-01-01T00-00-00.000000Z"
    run_dir.mkdir(parents=True)
    record = {
        "module": "seesaw",
        "claim": "C",
        "claim_held": False,
        "metrics": {},
        "config": {},
        "scale": "cpu",
        "seed": 0,
        "started_utc": "2026-01-01T00:00:00+00:00",
        "wall_time_s": 12.0,
        "git_commit": "abc",
        "measurement": "gap 0.1",
        "evidence": {"gap": 0.1},
        "plots": ["a.png"],
        "timings": {"summary": "step 1.2x the contender", "per_unit": {"a": 3.0}},
    }
    (run_dir / "result.json").write_text(json.dumps(record))
    assert report.refresh_readme(paper("seesaw"), tmp_path / "runs", src)
    text = readme.read_text()
    # a module's timing summary is shown beside the verdict; other timings stay in the record
    assert "- **Timings (beside the verdict, not in it):** step 1.2x the contender" in text and "per_unit" not in text
    assert "old" not in text and "**Measured:** gap 0.1" in text and "claim not held" in text
    assert "![a.png](../../runs/seesaw/2026-01-01T00-00-00.000000Z/a.png)" in text and text.endswith("prose\n")
    assert not report.refresh_readme(paper("seesaw"), tmp_path / "runs", src)  # idempotent


def test_status_table_of_the_top_readme_comes_from_the_records(tmp_path, monkeypatch):
    from iclr26 import report

    monkeypatch.setattr(report, "is_implemented", lambda module: module != "unisplat")
    out = tmp_path / "runs"
    _write_record(out, "seesaw", "2026-01-01T00-00-00.000000Z", "cpu", True, "gap", wall_time_s=500.0)
    _write_record(out, "seesaw", "2025-12-01T00-00-00.000000Z", "cpu", False, "gap", wall_time_s=620.4)
    _write_record(out, "kern", "2026-01-01T00-00-00.000000Z", "cpu", False, "gap")
    _write_record(out, "kern", "2026-01-02T00-00-00.000000Z", "smoke", True, "gap")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{report.STATUS_BEGIN}\nold\n{report.STATUS_END}\nrest\n")
    assert report.refresh_status(readme, out)
    text = readme.read_text()
    # the newest cpu record, its wall time and the previous cpu record's beside it (what `make run` changed)
    assert "| 7 | `seesaw` | held | [`runs/seesaw/2026-01-01T00-00-00.000000Z`]" in text
    assert "/result.json) | 500 s | 620 s |" in text
    assert "| 14 | `kern` | not held |" in text and "| 1 s | — |" in text  # cpu, not the newer smoke; no previous
    assert "| 1 | `lamir` | never run | — | — | — |" in text and "old" not in text and text.endswith("rest\n")
    assert "| 8 |" not in text  # unisplat is not implemented: not listed
    assert not report.refresh_status(readme, out)  # idempotent
    assert not report.refresh_status(readme, out, "gpu")  # no gpu record at all: the block stays


def test_help_config_shows_the_gpu_preset_projection_from_the_device_check(tmp_path):
    check = tmp_path / "gpu_presets.json"
    assert "no projected time yet" in cli.gpu_projection("kern", check)
    check.write_text(
        json.dumps(
            {
                "date": "2026-12-04",
                "device_name": "NVIDIA H200",
                "slices": [{"module": "kern", "projected_h": 6.5}, {"module": "meom", "error": "config: boom"}],
            }
        )
    )
    assert cli.gpu_projection("kern", check).startswith("gpu preset: about 6.5 h on one NVIDIA H200")
    assert "not projected by the device check of 2026-12-04 (config: boom)" in cli.gpu_projection("meom", check)
