"""The module README's "Using it" example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[2] / "src" / "iclr26" / "rgvfm" / "README.md"


def test_using_it_block_runs():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"### Using it\n+.*?```python\n(.*?)```", text, re.DOTALL).group(1)
    namespace: dict = {}
    exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - the README's own example
    assert namespace["samples"].shape == (1000, 3) and namespace["flow"].noise_scale == 0.1
    assert 0 < namespace["result"].best_step <= 100 and namespace["trainer"].step == 100
    assert torch.isfinite(namespace["loss"])
