"""The module README's "Using it" example runs as written."""

from __future__ import annotations

from tests.conftest import readme_example


def test_using_it_example_runs(capsys):
    readme_example("guishift")
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].endswith("expected 'open_app'") and " 1.0 wrong action_type" in lines[0]  # R_format 1, R_action 0
    assert lines[1].startswith("28 ") and "StepStats(" in lines[1]  # 4 walks x (8 - 2 + 1) pairs
    assert lines[2] in ("ok 0.0", "back on the home screen 0.0", "ok 1.0")
