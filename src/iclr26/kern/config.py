"""The config of the KERN reproduction (``iclr26 run kern``): routers, LM size, budget, verdict thresholds, presets.

Defaults are the ``cpu`` scale; ``SCALES`` holds ``smoke`` and ``gpu``. Every field states its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from iclr26.common.config import ExperimentConfig, opt, require
from iclr26.common.corpus import check_text_data, data_field
from iclr26.kern.router import ROUTERS

#: Most experts, hidden width and sequence length a field accepts (beyond the paper's largest settings).
MAX_EXPERTS = 1024
MAX_WIDTH = 16_384
MAX_CONTEXT = 32_768


@dataclass(frozen=True)
class KernConfig(ExperimentConfig):
    """Settings of the KERN reproduction; defaults are the ``cpu`` scale."""

    routers: tuple[str, ...] = opt(
        ("softmax", "softmax_renorm", "sigmoid", "tanh", "kern"),
        "routers to train (names in iclr26.kern.ROUTERS); the paper compares Softmax, Sigmoid, Tanh and KERN (its "
        "tables of §4); softmax_renorm is the Mixtral-style Softmax, so that KERN is judged against the stronger "
        "Softmax; kern_act_norm, the other order of Eq. (3)/(4), is left out of the cpu default for time (every "
        "model is trained at every LR of the sweep)",
    )
    include_dense: bool = opt(True, "also train a dense model of equal active parameters (the paper's Dense row)")
    n_seeds: int = opt(3, "seeds per model (the paper reports a three-seed study in its appendix)", ge=1, le=100)
    data: str | None = data_field("not in the paper, which uses Books3/Arxiv/FineWeb-Edu; chosen because it is offline")
    d_model: int = opt(64, "model width (not in the paper; sized for 2 CPU cores)", ge=1, le=MAX_WIDTH)
    n_layers: int = opt(2, "transformer blocks (not in the paper; sized for 2 CPU cores)", ge=1, le=256)
    n_heads: int = opt(4, "attention heads (not in the paper)", ge=1, le=256)
    context_len: int = opt(64, "tokens per sequence (paper: 512-2048; sized for CPU)", ge=1, le=MAX_CONTEXT)
    d_ff: int = opt(
        256,
        "dense MLP width; each expert gets d_ff / top_k so active parameters match (the paper matches Dense and MoE "
        "by active parameters)",
        ge=1,
        le=8 * MAX_WIDTH,
    )
    num_experts: int = opt(
        8, "experts per MoE layer (paper: expert ratio 8, e.g. 64 experts with 8 active; 8 experts, top-2 on CPU)",
        ge=1, le=MAX_EXPERTS,
    )  # fmt: skip
    top_k: int = opt(2, "experts per token (paper: 8 of 64; here 2 of 8)", ge=1, le=MAX_EXPERTS)
    aux_loss_coef: float = opt(
        0.01,
        "Switch load-balancing loss weight, same for every router (not in the paper; 0.01 as in Switch Transformer)",
        ge=0,
        le=10,
    )
    capacity_factor: float | None = opt(
        None, "expert capacity factor; none = dropless (not in the paper)", gt=0, le=float(MAX_EXPERTS)
    )
    total_tokens: int = opt(
        200_000,
        "training tokens per model (paper: 50K steps; sized so that 6 models x 3 LRs x 3 seeds fit in ~7 minutes of "
        "one CPU thread)",
        ge=1,
        le=10**11,
    )
    batch_size: int = opt(16, "sequences per step (not in the paper; CPU-sized)", ge=1, le=65_536)
    micro_batch_size: int = opt(16, "sequences per forward pass (memory only)", ge=1, le=65_536)
    peak_lrs: tuple[float, ...] = opt(
        (2e-3, 4e-3, 8e-3),
        "peak AdamW LRs of the sweep every model gets on every seed; each is judged at its own best (fair tuning, at "
        "least three LRs; not in the paper; a factor-2 grid around the usual LR of models this small)",
        gt=0,
        le=1,
    )
    dispatch: Literal["auto", "grouped", "padded", "grouped_mm"] = opt(
        "auto",
        "MoE dispatch: auto (grouped_mm on a CUDA build that has it, padded on other GPUs, grouped on the CPU), "
        "grouped (one product per expert), padded (one batched product over a fixed grid) or grouped_mm (sorted "
        "tokens, one grouped GEMM; CUDA bf16)",
    )
    check_finite: bool = opt(True, "NaN/inf checks in the router (a host sync on a GPU; on for the CPU reference runs)")
    bf16: bool = opt(
        True,
        "bf16 autocast of the LM on CUDA (the router's gate stays in float32); ignored on the CPU, whose runs are "
        "float32 (not in the paper; the field's usual mixed precision)",
    )
    warmup_frac: float = opt(0.05, "share of tokens in linear warm-up (not in the paper)", ge=0, lt=1)
    final_lr_frac: float = opt(0.1, "final LR / peak LR of the cosine decay (not in the paper)", ge=0, le=1)
    weight_decay: float = opt(0.1, "AdamW weight decay on matrices (not in the paper)", ge=0, le=10)
    n_evals: int = opt(4, "validation evaluations during training (plus the start)", ge=1, le=10_000)
    eval_tokens: int = opt(8192, "validation tokens per evaluation", ge=1, le=10**9)
    bench_d_model: int = opt(1024, "hidden size of the router micro-benchmark (paper's 350M-active scale)", ge=1,
                             le=MAX_WIDTH)  # fmt: skip
    bench_experts: int = opt(64, "experts in the router micro-benchmark (paper: 64)", ge=1, le=MAX_EXPERTS)
    bench_k: int = opt(8, "top-k in the router micro-benchmark (paper: 8)", ge=1, le=MAX_EXPERTS)
    bench_tokens: int = opt(
        4096, "tokens per call in the router micro-benchmark (run on `device`; one thread on the CPU)", ge=1,
        le=10**6,
    )  # fmt: skip
    bench_repeats: int = opt(
        30, "timed rounds, routers interleaved (median and min go to `timings`, never to the verdict)", ge=1,
        le=10_000,
    )  # fmt: skip
    scale_experts: tuple[int, int] = opt(
        (32, 256), "expert counts of the init-scale check (paper's sparsity sweep: 32-256, with k = M / 8)", ge=8,
        le=4096,
    )  # fmt: skip
    scale_tokens: int = opt(4096, "Monte-Carlo tokens of the init-scale check", ge=1, le=10**7)
    loss_tolerance: float = opt(
        0.01,
        "KERN 'matches or beats' Softmax if the upper confidence bound of the paired KERN - Softmax val loss gap is "
        "below this (nats; source: the paper's KERN-Softmax gaps are 0.02-0.09; 0.01 is our bar, below the smallest "
        "of them)",
        ge=0,
        le=10,
    )
    confidence: float = opt(
        0.95, "level of the two-sided paired-t interval of KERN - Softmax over seeds (source: convention)", gt=0, lt=1
    )
    cost_tolerance: float = opt(
        0.0,
        "'no extra cost' if KERN's counted gate FLOPs per token are at most (1 + this) x Softmax's (source: the "
        "paper's 'zero additional cost'; a count has no noise, so no slack)",
        ge=0,
        le=10,
    )
    device: str = opt("cpu", "torch device of the LM training: cpu, cuda, cuda:N or auto (gpu scale: cuda)")

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "routers": ("softmax", "softmax_renorm", "kern"),
            "peak_lrs": (3e-3, 6e-3),
            "include_dense": False,
            "n_seeds": 2,
            "d_model": 32,
            "n_layers": 1,
            "n_heads": 2,
            "context_len": 32,
            "d_ff": 64,
            "num_experts": 4,
            "top_k": 2,
            "total_tokens": 4096,
            "batch_size": 8,
            "micro_batch_size": 8,
            "n_evals": 2,
            "eval_tokens": 1024,
            "bench_d_model": 64,
            "bench_experts": 8,
            "bench_k": 2,
            "bench_tokens": 256,
            "bench_repeats": 3,
            "scale_tokens": 256,
        },
        "gpu": {
            "d_model": 512,
            "n_layers": 8,
            "n_heads": 8,
            "context_len": 512,
            "d_ff": 2048,
            "num_experts": 64,
            "top_k": 8,
            "total_tokens": 50_000_000,
            "batch_size": 64,
            "micro_batch_size": 64,
            "peak_lrs": (1e-3,),
            "capacity_factor": 2.0,
            "check_finite": False,
            "n_evals": 10,
            "eval_tokens": 262_144,
            "bench_tokens": 16_384,
            "bench_repeats": 100,
            "scale_tokens": 65_536,
            "device": "cuda",
        },
    }
    #: A slice of the gpu preset (same model, batch and dispatch; fewer tokens, one seed, two routers, no dense).
    GPU_SLICE: ClassVar[dict[str, Any]] = {
        "routers": ("softmax", "kern"),
        "include_dense": False,
        "n_seeds": 1,
        "total_tokens": 64 * 512 * 60,
        "n_evals": 1,
        "eval_tokens": 65_536,
        "bench_repeats": 10,
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        require(len(self.routers) > 0, "routers", "name at least one router")
        for name in self.routers:
            require(name in ROUTERS, "routers", f"unknown router {name!r}; choose from {sorted(ROUTERS)}")
        require(len(set(self.routers)) == len(self.routers), "routers", "names must not repeat")
        require(
            "softmax" in self.routers and "kern" in self.routers,
            "routers",
            "must include 'softmax' and 'kern' (the verdict compares them)",
        )
        require(self.d_model % self.n_heads == 0, "n_heads", f"must divide d_model={self.d_model}")
        require(self.top_k <= self.num_experts, "top_k", f"must lie in [1, num_experts={self.num_experts}]")
        require(self.d_ff % self.top_k == 0, "d_ff", f"must be divisible by top_k={self.top_k} (expert width)")
        require(self.bench_k <= self.bench_experts, "bench_k", "must lie in [1, bench_experts]")
        for m in self.scale_experts:
            require(m % 8 == 0, "scale_experts", f"each must be a multiple of 8 (k = M/8), got {m}")
        require(
            self.scale_experts[0] < self.scale_experts[1],
            "scale_experts",
            f"must be (smaller M, larger M), got {self.scale_experts}",
        )
        require(len(self.peak_lrs) > 0, "peak_lrs", "must hold at least one LR")
        require(len(set(self.peak_lrs)) == len(self.peak_lrs), "peak_lrs", f"must not repeat, got {self.peak_lrs}")
        require(
            self.total_tokens >= self.batch_size * self.context_len,
            "total_tokens",
            "must cover at least one batch (batch_size x context_len)",
        )
        check_text_data(self.data, field="data", min_tokens=self.context_len + 2)

    @property
    def d_expert(self) -> int:
        """Expert hidden width ``d_ff / top_k``: the MoE's active FFN parameters equal the dense MLP's."""
        return self.d_ff // self.top_k

    @property
    def models(self) -> list[str]:
        """Every trained model: the routers, then the dense model if included."""
        return list(self.routers) + (["dense"] if self.include_dense else [])

    def work(self) -> float:
        """Training tokens over every model, LR and seed (the run's cost is the training)."""
        return float(self.total_tokens * len(self.models) * len(self.peak_lrs) * self.n_seeds)
