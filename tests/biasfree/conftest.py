"""A tiny random Llama shared by the biasfree tests (built in code, well under a second after the imports)."""

import pytest


@pytest.fixture
def tiny():
    from iclr26.biasfree.tiny import tiny_random_lm

    return tiny_random_lm(seed=0)
