"""The README's "Using it" example runs as written and builds the Wan-layout input."""

from __future__ import annotations

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[2] / "src" / "iclr26" / "magref" / "README.md"


def test_using_it_block_runs():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Using it") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    torch.manual_seed(0)
    scope: dict = {}
    exec(compile(code, str(README), "exec"), scope)  # noqa: S102
    assert scope["y"].shape == (52, 2, 8, 8)  # 4 mask + 48 latent channels
    assert scope["v"].shape == (1, 48, 2, 8, 8)
    assert scope["canvas"].region_masks.shape == (2, 16, 16)
