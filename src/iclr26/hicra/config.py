"""The config of the HICRA reproduction: the tiny-LM countdown run (``cpu``, ``smoke``) and SmolLM2 with LoRA (``gpu``).

Every field cites its source: the paper (arXiv 2509.03646), DeepSeekMath's GRPO, or "not in the paper" with the
reason for the value. Defaults are the ``cpu`` scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from iclr26.common.config import ExperimentConfig, opt, require
from iclr26.common.grpo import Parallel, RolloutSeeds, check_parallel, parallel_field, rollout_seeds_field
from iclr26.hicra.task import make_problems
from iclr26.hicra.training import ARMS


@dataclass(frozen=True)
class HicraConfig(ExperimentConfig):
    """Settings of the HICRA reproduction; defaults are the ``cpu`` scale."""

    backend: Literal["tinylm", "smollm2"] = opt(
        "tinylm",
        "policy: a tiny LM trained from scratch (cpu) or SmolLM2-135M-Instruct with LoRA via "
        "iclr26.common.pretrained (gpu preset; the paper's pretrained-model setting)",
    )
    n_seeds: int = opt(5, "RL seeds per arm, paired across arms (the paper reports one run)", ge=1, le=100)
    max_number: int = opt(
        24,
        "largest number in a problem (not in the paper; 898 problems, so that half of them make a held-out set whose "
        "binomial evaluation noise is small next to a 3-point effect; evaluation is cheap next to training)",
        ge=3,
        le=99,
    )
    held_out_frac: float = opt(
        0.5,
        "share of problems held out from SFT and RL, scored greedily (not in the paper; 449 of 898 problems: the "
        "paired accuracy difference of 58 items had sd 0.09, about √2 times their binomial sd)",
        gt=0,
        lt=1,
    )
    d_model: int = opt(64, "tiny LM width (not in the paper; sized for 2 CPU cores)", ge=4, le=4096)
    n_layers: int = opt(2, "tiny LM blocks (not in the paper)", ge=1, le=64)
    n_heads: int = opt(4, "tiny LM attention heads (not in the paper)", ge=1, le=64)
    d_ff: int = opt(128, "tiny LM MLP width (not in the paper)", ge=1, le=16384)
    sft_steps: int = opt(
        800,
        "tiny LM: SFT steps on mixed-quality traces (not in the paper: its base models are pretrained; chosen so that "
        "execution is mostly right and planning is not)",
        ge=1,
        le=10**6,
    )
    sft_batch: int = opt(32, "tiny LM: traces per SFT step (not in the paper)", ge=1, le=4096)
    sft_lr: float = opt(3e-3, "tiny LM: SFT AdamW learning rate, linear decay to 10% (not in the paper)", gt=0, le=1)
    sft_mix: tuple[float, float, float] = opt(
        (0.5, 0.25, 0.25),
        "shares of correct, premature-commit and arithmetic-slip SFT traces (not in the paper: a start that "
        "executes well and plans badly, the setting the paper's analysis describes)",
        ge=0,
        le=1,
    )
    rl_steps: int = opt(
        60,
        "RL steps per arm and seed, equal for every arm (not in the paper; sized for the cpu budget)",
        ge=1,
        le=10**6,
    )
    prompts_per_step: int = opt(8, "prompts Q per RL step (not in the paper; CPU-sized)", ge=1, le=4096)
    group_size: int = opt(8, "samples G per prompt (the GRPO group; the paper uses 8-16)", ge=2, le=1024)
    rl_lr: float = opt(3e-4, "tiny LM: RL AdamW learning rate, the same for every arm (not tuned per arm)", gt=0, le=1)
    alpha: float = opt(0.2, "HICRA's α (paper §3: 0.2), also used by the placebo and entropy arms", ge=0, le=10)
    clip_eps: float = opt(0.2, "PPO/GRPO ratio clip ε (DeepSeekMath: 0.2)", gt=0, lt=1)
    max_new_tokens: int = opt(56, "completion length cap (the longest correct trace has 47 tokens)", ge=1, le=2048)
    eval_every: int = opt(10, "held-out evaluation cadence in RL steps", ge=1, le=10**6)
    n_min: int = opt(3, "shortest Strategic Gram in words (paper §2: 3-5 words)", ge=1, le=32)
    n_max: int = opt(5, "longest Strategic Gram in words (paper §2: 3-5 words)", ge=1, le=32)
    min_doc_frac: float = opt(
        0.05, "smallest cluster document frequency kept (not in the paper's text we read)", gt=0, le=1
    )
    max_within: float = opt(
        2.0, "largest mean within-solution count of a kept cluster (not in the paper)", ge=1, le=1000
    )
    max_doc_frac: float = opt(
        1.0,
        "largest cluster document frequency kept: 1 keeps grams that occur in every correct solution (the commit "
        "move 'so the answer is'), as the paper's filter (high cross-solution, low within-solution frequency, §2) "
        "keeps them",
        gt=0,
        le=1,
    )
    merge_jaccard: float = opt(
        0.5,
        "word-set Jaccard at which grams are paraphrases (stands in for the paper's semantic clustering)",
        gt=0,
        le=1,
    )
    placebo_draws: int = opt(
        64, "random gram sets drawn; the one closest in token coverage is the placebo", ge=1, le=100_000
    )
    confidence: float = opt(
        0.95,
        "one-sided confidence of the paired t-test across seeds (fixed before any run; the usual 5% level)",
        ge=0.5,
        lt=1,
    )
    min_gain: float = opt(
        0.0,
        "the lower confidence bound of the mean paired accuracy gain must exceed this (source: the claim is "
        "'outperforms'; 0 = any gain)",
        ge=-1,
        le=1,
    )
    min_rl_gain: float = opt(
        0.0,
        "gate: the lower confidence bound of GRPO's held-out accuracy gain over the SFT start must exceed this, or RL "
        "did not move the policy and no arm comparison means anything (fixed before any run; 0 = any gain)",
        ge=-1,
        le=1,
    )
    effect_size: float = opt(
        0.03,
        "the accuracy gain over GRPO whose power the record reports (3 points: the order of the paper's gains over "
        "GRPO on its benchmarks, 1-8 points); reported, not in the verdict",
        gt=0,
        le=1,
    )
    entropy_drop: float = opt(
        0.1,
        "phase 1 is 'observed' if execution-token entropy falls by at least this share over the first quarter of RL "
        "(fixed before any run; the paper shows a sharp early drop without a number)",
        ge=0,
        lt=1,
    )
    lora_r: int = opt(16, "LoRA rank (smollm2 backend only; not in the paper)", ge=1, le=1024)
    pretrained_sft_steps: int = opt(
        300,
        "smollm2 backend: SFT steps of the LoRA adapters (not in the paper: its bases are instruct models)",
        ge=1,
        le=10**6,
    )
    pretrained_sft_batch: int = opt(16, "smollm2 backend: traces per SFT step (not in the paper)", ge=1, le=4096)
    pretrained_sft_lr: float = opt(2e-4, "smollm2 backend: SFT AdamW learning rate of the adapters", gt=0, le=1)
    pretrained_rl_lr: float = opt(
        2e-5, "smollm2 backend: RL AdamW learning rate of the adapters, the same for every arm", gt=0, le=1
    )
    rollout_seeds: RolloutSeeds = rollout_seeds_field()
    parallel: Parallel = parallel_field()
    device: str = opt("cpu", "torch device: cpu, cuda, cuda:N or auto (gpu preset: cuda, smollm2)")

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "n_seeds": 1,
            "max_number": 5,
            "d_model": 32,
            "d_ff": 64,
            "sft_steps": 200,
            "sft_batch": 16,
            "rl_steps": 2,
            "prompts_per_step": 2,
            "group_size": 4,
            "eval_every": 2,
            "placebo_draws": 4,
        },
        "gpu": {
            "backend": "smollm2",
            "max_number": 20,
            "rl_steps": 200,
            "prompts_per_step": 16,
            "group_size": 8,
            "max_new_tokens": 96,
            "eval_every": 20,
            "device": "cuda",
        },
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.d_model % self.n_heads == 0, "n_heads", f"must divide d_model={self.d_model}")
        require((self.d_model // self.n_heads) % 2 == 0, "n_heads", "d_model / n_heads must be even (RoPE)")
        require(sum(self.sft_mix) > 0, "sft_mix", "must not be all 0")
        require(self.n_min <= self.n_max, "n_min", f"need n_min <= n_max, got {self.n_min}, {self.n_max}")
        require(
            self.min_doc_frac <= self.max_doc_frac,
            "max_doc_frac",
            f"must be >= min_doc_frac={self.min_doc_frac}, got {self.max_doc_frac}",
        )
        check_parallel(self.parallel, self.backend)

    #: A slice of the gpu preset (the same model, batches and completion length; fewer problems, steps and seeds).
    GPU_SLICE: ClassVar[dict[str, Any]] = {
        "n_seeds": 1,
        "max_number": 8,
        "pretrained_sft_steps": 4,
        "rl_steps": 2,
        "eval_every": 2,
    }

    def work(self) -> float:
        """Sequences trained on or decoded in all: SFT traces; the mining samples and the SFT start's two greedy
        evaluations; every arm's RL samples and held-out evaluations, of every seed."""
        n_problems = len(make_problems(self.max_number))
        n_held = round(self.held_out_frac * n_problems)
        pretrained = self.backend == "smollm2"
        sft = (self.pretrained_sft_steps * self.pretrained_sft_batch) if pretrained else self.sft_steps * self.sft_batch
        n_evals = self.rl_steps // self.eval_every + 1 + (self.rl_steps % self.eval_every != 0)  # step 0 to the last
        per_arm = self.rl_steps * self.prompts_per_step * self.group_size + n_evals * n_held
        return float(sft + 2 * n_problems + self.n_seeds * len(ARMS) * per_arm)
