"""Every command of the README's "Using it" block works as written (at smoke scale, into a temporary folder)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from iclr26 import cli, runall
from iclr26.catalog import PAPERS, paper
from iclr26.common.experiment import RunContext
from tests.conftest import readme_example

ROOT = Path(__file__).resolve().parents[1]


def using_it_commands() -> list[str]:
    """The commands of the first bash block after the README's "## Using it" heading, comments stripped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Using it") :]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_every_using_it_command_runs_as_written(tmp_path, monkeypatch, capsys):
    commands = using_it_commands()
    assert len(commands) >= 8 and all(c.startswith("iclr26 ") for c in commands)
    out = tmp_path / "runs"
    data = tmp_path / "file.txt"
    data.write_text("def f(x):\n    return x + 1\n" * 400)
    readmes = {p: p.read_bytes() for p in [ROOT / "README.md", *(ROOT / "src" / "iclr26").glob("*/README.md")]}

    # An interrupted seesaw run for the --resume line: stopped (as by Ctrl-C) before its second unit.
    real_unit = RunContext.unit

    def stop_after_first(self, key, compute):
        if self.units:
            raise KeyboardInterrupt
        return real_unit(self, key, compute)

    with monkeypatch.context() as patch:
        patch.setattr(RunContext, "unit", stop_after_first)
        assert cli.main(["run", "seesaw", "--scale", "smoke", "--out", str(out), "--quiet"]) == 130
    (interrupted,) = (out / "seesaw").iterdir()

    for command in commands:
        argv = shlex.split(command.replace("/path/to/file.txt", str(data)))[1:]
        argv = [str(interrupted) if a == "runs/seesaw/<stamp>" else a for a in argv]
        argv = ["smoke" if a == "cpu" else a for a in argv]  # the tests run smoke scale
        if argv[0] == "run" and "--help-config" not in argv and "--resume" not in argv:
            argv += [*(["--scale", "smoke"] if "--scale" not in argv else []), "--quiet"]
        if "--resume" not in argv and "--help-config" not in argv:
            argv += ["--out", str(out)]
        with monkeypatch.context() as patch:
            if argv[:2] == ["run", "all"]:  # every paper's smoke runs in test_contract; here the scheduling alone
                patch.setattr(cli, "implemented", lambda: [paper("meom"), paper("nextstep")])
                patch.setattr(runall, "COMMAND", [sys.executable, "-c", "import sys; sys.exit(0)"])
            status = cli.main(argv)
        captured = capsys.readouterr()
        assert status == 0, f"{command!r} -> {argv} exited {status}:\n{captured.out}\n{captured.err}"
        if argv[:2] == ["run", "all"]:
            assert "[meom] finished" in captured.out and "[nextstep] finished" in captured.out
    assert (interrupted / "result.json").is_file()  # the --resume line finished the interrupted run
    assert (out / "report.md").is_file()
    assert {p.name for p in out.iterdir() if p.is_dir()} == {"seesaw"}
    assert {p: p.read_bytes() for p in readmes} == readmes  # no cpu record here: the READMEs are untouched


@pytest.mark.parametrize("module", [p.module for p in PAPERS])
def test_every_module_readme_usage_block_runs(module):
    """The python block under each module README's "### Using it" runs as written (it is meant to take seconds)."""
    readme_example(module)
