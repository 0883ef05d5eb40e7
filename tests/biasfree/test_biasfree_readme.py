"""The module README's "Using it" example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "src" / "iclr26" / "biasfree" / "README.md"


def test_using_it_example_runs(capsys):
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text[text.index("### Using it") :], re.DOTALL).group(1)
    exec(compile(block, str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "66.67" in out and "0.6444" in out and "Let's think step by step" in out
