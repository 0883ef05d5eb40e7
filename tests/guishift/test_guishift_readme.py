"""The module README's "Using it" example runs as written."""

from __future__ import annotations

from tests.conftest import readme_example


def test_using_it_example_runs(capsys):
    readme_example("guishift")
    lines = capsys.readouterr().out.splitlines()
    # two shortest-path first actions for the first pair; R_format 1 and R_action 0 for navigate_back
    assert lines[0] == "2 1.0 wrong action_type 'navigate_back', expected 'click'"
    # 4 walks x (8 - 2 + 1) pairs, less the 2 whose two screens are identical
    assert lines[1].startswith("26 ") and "StepStats(" in lines[1]
