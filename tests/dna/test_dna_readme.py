"""The module README's "Using it" example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "src" / "iclr26" / "dna" / "README.md"


def test_using_it_example_runs(capsys):
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text[text.index("### Using it") :], re.DOTALL).group(1)
    exec(compile(block, str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "premises contradict" in out and "['segment', 'triangle']" in out and "a -> b -> a" in out
