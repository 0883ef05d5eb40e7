"""The module README's "Using it" example runs as written."""

from __future__ import annotations

from tests.conftest import readme_example


def test_using_it_example_runs(capsys):
    readme_example("unisplat")
    out = capsys.readouterr().out
    assert "PSNR" in out
