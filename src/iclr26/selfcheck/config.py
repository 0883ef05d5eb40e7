"""The config of the built-in check: a tiny LM run (not in any paper: chosen to take well under a minute)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from iclr26.common.config import ExperimentConfig, opt
from iclr26.common.corpus import check_text_data


@dataclass(frozen=True)
class SelfCheckConfig(ExperimentConfig):
    """A tiny LM run; defaults are the `cpu` scale."""

    data: str | None = opt(None, "UTF-8 text file or folder of them; default: the Python stdlib")
    context_len: int = opt(64, "tokens per sequence", ge=1, le=4096)
    d_model: int = opt(64, "model width", ge=4, le=8192)
    n_layers: int = opt(2, "transformer blocks", ge=1, le=64)
    batch_size: int = opt(16, "sequences per step", ge=1, le=4096)
    total_tokens: int = opt(64 * 16 * 200, "training budget in tokens", ge=1, le=10**10)
    lr: float = opt(3e-3, "peak AdamW learning rate", gt=0, le=1)

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"total_tokens": 64 * 16 * 20},
        "gpu": {
            "d_model": 256,
            "n_layers": 4,
            "context_len": 256,
            "batch_size": 64,
            "total_tokens": 256 * 64 * 2000,
        },
    }
    ALIASES: ClassVar[dict[str, str]] = {"corpus": "data"}

    def __post_init__(self) -> None:
        super().__post_init__()
        check_text_data(self.data, field="data", min_tokens=self.context_len + 2)
