"""The config of the BiasFreeBench reproduction: the model, the items, the generation budgets and the training arms.

BiasFreeBench: a Benchmark for Mitigating Bias in Large Language Model Responses, ICLR 2026, arXiv 2510.00232.
Defaults are the ``cpu`` scale; ``SCALES`` holds the ``smoke`` and ``gpu`` presets.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from iclr26.common.config import ConfigError, ExperimentConfig, opt, require
from iclr26.common.model_files import model_problem

#: The two built-in model names; anything else is a local path.
BUILTIN_MODELS = ("smollm2", "tiny-random")


@dataclass(frozen=True)
class BiasFreeConfig(ExperimentConfig):
    """BiasFreeBench's prompting and training methods on one instruct LM; defaults are the ``cpu`` scale."""

    model: str = opt("smollm2", "the instruct LM: 'smollm2' (SmolLM2-135M-Instruct via iclr26.common.pretrained), "
                     "'tiny-random' (a random tiny Llama; smoke runs) or a local .gguf file / Hugging Face model "
                     "folder (paper: Llama-3.1-8B-Instruct and others)")  # fmt: skip
    dtype: Literal["bfloat16", "float32"] = opt(
        "bfloat16", "model precision (bfloat16 takes less CPU time, benchmarks/pretrained_lm.py; the paper's vLLM "
        "runs use bfloat16)")  # fmt: skip
    device: str = opt("cpu", "torch device: cpu, cuda, cuda:N or auto (gpu preset: cuda)")
    n_per_category: int = opt(8, "held-out items per BBQ category (9 categories; paper: all 15,686 ambiguous "
                              "items; sized for 10 minutes of one CPU thread)", ge=1, le=10**5)  # fmt: skip
    max_new_tokens: int = opt(24, "new tokens of an answer (paper: 128; the vanilla/self-aware/self-reflection "
                              "prompts ask for the answer alone, so a short budget keeps it)", ge=1,
                              le=8192)  # fmt: skip
    cot_max_new_tokens: int = opt(64, "new tokens of a CoT reply (paper: 128; the budget cuts long reasoning, "
                                  "whose final answer line is then missing)", ge=1, le=8192)  # fmt: skip
    rewrite_max_new_tokens: int = opt(80, "new tokens of a self-help rewrite (paper: 128; a rewritten system "
                                      "prompt + query of a generated item fits in ~80)", ge=1, le=8192)  # fmt: skip
    batch_size: int = opt(32, "prompts per generate call (the official code's vLLM batches 8)", ge=1, le=4096)
    train_steps: int = opt(8, "optimizer steps of every training arm (paper: 20 epochs over 8,497 pairs; sized "
                           "for a whole run within 10 minutes of one CPU thread: an SFT step of 8 pairs ~5 CPU-s, a "
                           "DPO step ~10; the gpu preset runs 400 of 16)", ge=1, le=10**6)  # fmt: skip
    train_batch: int = opt(8, "pairs per step (paper: 16 x 4 accumulation)", ge=1, le=4096)
    lr: float = opt(1e-3, "peak AdamW learning rate of every arm, one value for all (paper: 8e-6 for ~2,650 "
                    "steps; raised for 8 steps so that the arms move the model: in a pilot on seed 1000, not the "
                    "record's, 8 steps at 1e-3 changed 23-30 of 72 vanilla answers per arm, enough for the "
                    "min_changed_share gate; at 2e-4 the task vector changed none in the first record; no BFS was "
                    "looked at)", gt=0, le=1)  # fmt: skip
    warmup_ratio: float = opt(0.1, "linear warm-up share of the steps, then cosine (paper's SFT/DPO yaml: 0.1)",
                              ge=0, lt=1)  # fmt: skip
    lora_r: int = opt(8, "LoRA rank on every linear layer (LLaMA-Factory's default with lora_target: all)", ge=1,
                      le=4096)  # fmt: skip
    lora_alpha: float = opt(16.0, "LoRA alpha (LLaMA-Factory's default 2r)", gt=0, le=10**6)
    beta: float = opt(0.1, "DPO beta (paper's yaml: pref_beta 0.1, sigmoid loss)", gt=0, le=1000)
    tv_lambda: float = opt(0.5, "task-vector negation scale (official Task_Vector/test.py: scaling_coef 0.5)", ge=0,
                           le=100)  # fmt: skip
    n_boot: int = opt(2000, "bootstrap draws over items (not in the paper; fixed before the first run)", ge=1,
                      le=10**6)  # fmt: skip
    confidence: float = opt(0.95, "one-sided confidence of every bound in the verdict (fixed before the first run)",
                            gt=0.5, lt=1)  # fmt: skip
    prompting_margin: float = opt(0.0, "BFS points that mean(prompting) - mean(training) must exceed at its "
                                  "lower bound (the claim is 'prompting beats training'; fixed before the first "
                                  "run)", ge=-100, le=100)  # fmt: skip
    dpo_sft_margin: float = opt(5.0, "non-inferiority margin of DPO >= SFT in BFS points: BFS_DPO - BFS_SFT must "
                                "have its lower bound above -5 (not in the paper; chosen before the first run as "
                                "a small share of the paper's method gaps, 10-40 points)", ge=0,
                                le=100)  # fmt: skip
    max_unclassified: float = opt(0.5, "largest unrelated share of any method for the BFS to count (not in the "
                                  "paper; above it BFS rests on under half of the items)", gt=0,
                                  le=1)  # fmt: skip
    min_changed_share: float = opt(0.1, "gate: share of the items whose judged answer each training arm (SFT, DPO, "
                                   "Task Vector) must change from the base model's vanilla answer for the "
                                   "comparison to count; an arm below it has not moved the model (not in the "
                                   "paper; one item in ten, fixed before the second cpu record)", ge=0,
                                   le=1)  # fmt: skip
    n_examples: int = opt(3, "example responses per method in the record", ge=1, le=10**4)
    data: Path | None = opt(None, "official BBQ data: xxupiano/BiasFreeBench's root or BBQ folder (ambigdata/ + "
                            "code/labels/), replacing the generated items")  # fmt: skip
    train_data: Path | None = opt(None, "official DPO training JSON (balanced_debias_dpo-8497.json: prompt, chosen, "
                                  "rejected; optional bias_type), replacing the generated pairs")  # fmt: skip

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"model": "tiny-random", "dtype": "float32", "n_per_category": 1, "max_new_tokens": 4,
                  "cot_max_new_tokens": 6, "rewrite_max_new_tokens": 8, "train_steps": 1, "train_batch": 2,
                  "n_boot": 50, "n_examples": 1},
        "gpu": {"device": "cuda", "n_per_category": 72, "max_new_tokens": 128, "cot_max_new_tokens": 128,
                "rewrite_max_new_tokens": 128, "train_steps": 400, "train_batch": 16, "lr": 1e-4},
    }  # fmt: skip

    #: A ninth of the gpu preset in items and training steps alike, so its time scales to the preset's by work().
    GPU_SLICE: ClassVar[dict[str, Any]] = {"n_per_category": 8, "train_steps": 44}

    def work(self) -> float:
        """Generated tokens (budget × items × the turns of the methods and arms) plus trained tokens (pairs × steps
        × arms at ~64 tokens a pair, DPO's pairs counted twice)."""
        items = 9 * self.n_per_category
        generated = items * (8 * self.max_new_tokens + self.cot_max_new_tokens + self.rewrite_max_new_tokens)
        return float(generated + 64 * 6 * self.train_steps * self.train_batch)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.model not in BUILTIN_MODELS:
            problem = model_problem(self.model)
            if problem is not None and not self.model.strip():
                problem = f"{problem}, or 'smollm2' or 'tiny-random'"
            require(problem is None, "model", str(problem))
        if self.data is not None:
            from iclr26.biasfree.data import load_bbq

            try:
                items = load_bbq(self.data)
            except ValueError as err:
                raise ConfigError(f"config field 'data': {err}") from None
            counts = Counter(it.category for it in items)
            short = {c: n for c, n in counts.items() if n < self.n_per_category}
            require(not short, "n_per_category", f"the data has fewer items than {self.n_per_category} in {short}")
        if self.train_data is not None:
            from iclr26.biasfree.data import load_dpo

            try:
                load_dpo(self.train_data)
            except ValueError as err:
                raise ConfigError(f"config field 'train_data': {err}") from None
