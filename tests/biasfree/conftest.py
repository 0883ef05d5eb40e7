"""A tiny random Llama shared by the biasfree tests (built in code, well under a second after the imports)."""

import pytest


@pytest.fixture
def tiny():
    from iclr26.common.pretrained import random_llama

    return random_llama(seed=0, name="tiny-random-llama")
