"""The module README's "Using it" example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "src" / "iclr26" / "guishift" / "README.md"


def test_using_it_example_runs(capsys):
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text[text.index("### Using it") :], re.DOTALL).group(1)
    exec(compile(block, str(README), "exec"), {})
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].endswith("expected 'open_app'") and " 1.0 wrong action_type" in lines[0]  # R_format 1, R_action 0
    assert lines[1].startswith("28 ") and "StepStats(" in lines[1]  # 4 walks x (8 - 2 + 1) pairs
    assert lines[2] in ("ok 0.0", "back on the home screen 0.0", "ok 1.0")
