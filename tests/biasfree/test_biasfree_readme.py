"""The module README's "Using it" example runs as written."""

from tests.conftest import readme_example


def test_using_it_example_runs(capsys):
    readme_example("biasfree")
    out = capsys.readouterr().out
    assert "66.67" in out and "0.6444" in out and "Let's think step by step" in out
