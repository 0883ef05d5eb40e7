"""The module README's "Using it" example runs as written."""

from __future__ import annotations

from tests.conftest import readme_example


def test_using_it_block_runs():
    namespace = readme_example("eog")
    assert len(namespace["curves"].reward) == 1 and namespace["r"].total == 2.0
