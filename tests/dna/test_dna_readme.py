"""The module README's "Using it" example runs as written."""

from __future__ import annotations

from tests.conftest import readme_example


def test_using_it_example_runs(capsys):
    readme_example("dna")
    out = capsys.readouterr().out
    assert "premises contradict" in out and "['segment', 'triangle']" in out and "a -> b -> a" in out
