"""Device resolution: explicit choices, clear errors, no silent fallback."""

import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.common.device import resolve_device


def test_cpu_and_auto():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_cuda_without_cuda_names_the_field_and_the_fix():
    with pytest.raises(ConfigError, match="'device': 'cuda' requested but CUDA is not available.*device=cpu"):
        resolve_device("cuda")


def test_unknown_device_names_the_field():
    with pytest.raises(ConfigError, match="'device': unknown device 'gpu0'"):
        resolve_device("gpu0")
    with pytest.raises(ConfigError, match="unsupported device type 'meta'"):
        resolve_device("meta")
