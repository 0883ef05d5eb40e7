"""The README's "Using it" example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[2] / "src" / "iclr26" / "page4d" / "README.md"


def test_using_it_block_runs():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Using it") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    torch.manual_seed(0)
    scope: dict = {}
    exec(compile(code, str(README), "exec"), scope)  # noqa: S102
    assert scope["out"].shape == (1, 4, 42, 8)
    assert scope["pred"].mask.shape == (2, 3, 4, 4)
    assert scope["step"].alpha == 64.0
