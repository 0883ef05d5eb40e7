"""The module README's "Using it" example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "src" / "iclr26" / "eog" / "README.md"


def test_using_it_block_runs():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"### Using it\n+```python\n(.*?)```", text, re.DOTALL).group(1)
    namespace: dict = {}
    exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - the README's own example
    assert len(namespace["curves"].reward) == 1 and namespace["r"].total == 2.0
