"""The module README's "Using it" example runs as written (it calls coqc once)."""

from __future__ import annotations

from tests.conftest import readme_example


def test_using_it_example_runs(capsys):
    readme_example("dexploration")
    out = capsys.readouterr().out
    assert "not_entailed" in out and "Theorem t0" in out
