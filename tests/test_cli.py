"""The `iclr26` command end to end: list, run (the built-in selfcheck), report, bad input."""

import json

from iclr26 import cli
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
    lines = proc.stdout.strip().splitlines()[1:]
    assert len(lines) == 19 and lines[0].split()[:2] == ["1", "lamir"] and lines[-1].split()[:2] == ["19", "guishift"]
    assert all("never run" in line for line in lines)


def test_selfcheck_run_writes_a_complete_record_and_report(smoke, cli, tmp_path):
    record = smoke("selfcheck", "--seed", "3", "--set", "lr=0.004")
    assert record["module"] == "selfcheck" and record["scale"] == "smoke" and record["seed"] == 3
    assert record["config"]["lr"] == 0.004 and record["config"]["seed"] == 3
    assert record["claim_held"] is True
    assert record["evidence"]["final_val_loss"] < record["evidence"]["uniform_loss"]
    assert record["metrics"]["params_changed"] > 0 and record["plots"] == ["loss.png"]
    for key in ("package_version", "torch", "python", "wall_time_s", "started_utc", "git_commit", "claim"):
        assert key in record
    out = tmp_path / "runs"
    proc = cli("report", "--out", str(out))
    assert proc.returncode == 0
    report = (out / "report.md").read_text()
    assert report.count("\n| ") == 20  # header + 19 papers
    assert "0 of 19 papers have a record" in report  # selfcheck is not a paper


def test_bad_set_values_are_rejected_before_anything_is_written(capsys, tmp_path):
    for args, message in [
        (["--set", "lr=fast"], "--set lr='fast': expected float"),
        (["--set", "nope=1"], "--set nope: unknown key"),
        (["--set", "batch_size=0"], "config field 'batch_size': must be positive"),
        (["--threads", "-1"], "--threads must be positive"),
    ]:
        assert cli.main(["run", "selfcheck", "--out", str(tmp_path), *args]) == 2
        assert message in capsys.readouterr().err
    assert cli.main(["run", "nosuchpaper", "--out", str(tmp_path)]) == 2
    assert "unknown module 'nosuchpaper'" in capsys.readouterr().err
    assert not (tmp_path / "selfcheck").exists()


def test_help_config_lists_fields(cli):
    proc = cli("run", "selfcheck", "--help-config")
    assert proc.returncode == 0 and "total_tokens" in proc.stdout and "training budget in tokens" in proc.stdout


def test_run_all_goes_on_after_a_failing_paper(monkeypatch, capsys, tmp_path):
    ran = []

    def fake_run_one(module, args):
        ran.append(module)
        if module == "rgvfm":
            raise RuntimeError("boom")
        return 0

    monkeypatch.setattr(cli, "implemented", lambda: [paper("lamir"), paper("rgvfm"), paper("hicra")])
    monkeypatch.setattr(cli, "_run_one", fake_run_one)
    status = cli.main(["run", "all", "--scale", "smoke", "--out", str(tmp_path)])
    assert status == 1 and ran == ["lamir", "rgvfm", "hicra"]
    assert "failed: rgvfm" in capsys.readouterr().out


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
    }
    (run_dir / "result.json").write_text(json.dumps(record))
    assert report.refresh_readme(paper("seesaw"), tmp_path / "runs", src)
    text = readme.read_text()
    assert "old" not in text and "**Measured:** gap 0.1" in text and "claim not held" in text
    assert "![a.png](../../runs/seesaw/2026-01-01T00-00-00.000000Z/a.png)" in text and text.endswith("prose\n")
    assert not report.refresh_readme(paper("seesaw"), tmp_path / "runs", src)  # idempotent
