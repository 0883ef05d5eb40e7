"""The config of the Explore-on-Graph reproduction: the tiny word-level LM run (``cpu``, ``smoke``) and SmolLM2 with
LoRA (``gpu``).

Every field cites its source: the paper (arXiv 2602.21728), the official ``train/run_eog.sh`` / ``run_cwq_sft.sh``,
or "not in the paper" with the reason for the value. Defaults are the ``cpu`` scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from iclr26.common.config import ConfigError, ExperimentConfig, opt, require
from iclr26.common.grpo import Parallel, RolloutSeeds, check_parallel, parallel_field, rollout_seeds_field
from iclr26.eog.data import compact_prompt, load_rog_jsonl
from iclr26.eog.policy import tokenize

#: The arms of the reproduction.
ARMS = ("sft", "imitation", "grpo_f1", "eog", "placebo")


@dataclass(frozen=True)
class EogConfig(ExperimentConfig):
    """Settings of the EoG reproduction; defaults are the ``cpu`` scale."""

    backend: Literal["tinylm", "smollm2"] = opt(
        "tinylm",
        "policy: a tiny word-level LM from scratch (cpu) or SmolLM2-135M-Instruct with LoRA via "
        "iclr26.common.pretrained (gpu preset; the paper fine-tunes Qwen2.5-7B-Instruct)",
    )
    data: Path | None = opt(
        None,
        "RoG-processed CWQ/WebQSP JSONL (fields question, answer, q_entity, a_entity, graph, reasoning_path; "
        "official data/EoG_process.py input); none = the synthetic KG",
    )
    n_seeds: int = opt(
        10,
        "seeds per arm, paired across arms (10: the 5-seed record's paired F1 difference EoG − GRPO(F1) had sd 0.060, "
        "so the F1 non-inferiority test at 5 points has power ~0.8 for a true difference of 0 at 10 seeds, "
        "(t_0.95 + t_0.8)·0.060/√10 = 0.052, and could not pass at 5, t_0.95·0.060/√5 = 0.057 > 0.05)",
        ge=1,
        le=100,
    )
    n_sft: int = opt(500, "SFT questions, in-distribution (not in the paper; CPU-sized)", ge=1, le=10**6)
    n_rl: int = opt(500, "RL pool questions (not in the paper; CPU-sized)", ge=1, le=10**6)
    n_test: int = opt(100, "questions per test split (ID and OOD; not in the paper)", ge=1, le=10**5)
    rl_ood_frac: float = opt(0.5, "share of OOD-composition questions in the RL pool (not in the paper)", ge=0, le=1)
    ood_bigrams: int = opt(
        3, "relation bigrams held out of SFT; compositions containing one are OOD (not in the paper)", ge=0, le=100
    )
    n_graph: int = opt(12, "triples per question subgraph (RoG subgraphs are larger)", ge=1, le=10**4)
    kg_scale: float = opt(
        1.0, "entity counts multiplier of the synthetic KG (1: 60 persons ... 8 languages)", gt=0, le=100
    )
    ood_frac: float = opt(0.25, "with data=PATH: share of distinct compositions held out as OOD", gt=0, lt=1)
    d_model: int = opt(64, "tiny LM width (not in the paper; sized for one CPU thread)", ge=4, le=4096)
    n_layers: int = opt(2, "tiny LM blocks (not in the paper)", ge=1, le=64)
    n_heads: int = opt(4, "tiny LM attention heads (not in the paper)", ge=1, le=64)
    d_ff: int = opt(128, "tiny LM MLP width (not in the paper)", ge=1, le=16384)
    sft_steps: int = opt(
        500,
        "tiny LM: stage-1 SFT steps (paper: 3 epochs at lr 2e-5 on Qwen, train/run_cwq_sft.sh)",
        ge=1,
        le=10**6,
    )
    sft_batch: int = opt(24, "tiny LM: traces per SFT step (run_cwq_sft.sh: 16)", ge=1, le=4096)
    sft_lr: float = opt(2e-3, "tiny LM: SFT AdamW learning rate (not in the paper)", gt=0, le=1)
    cite_prob: float = opt(
        0.6,
        "share of SFT trace steps cited as (s, r, o) (the rest loosely): the traces' mixed faithfulness (not in the "
        "paper; chosen so the path reward has something to refine)",
        ge=0,
        le=1,
    )
    detour_prob: float = opt(
        0.3, "share of SFT traces that first cite an off-path triple (futile exploration)", ge=0, le=1
    )
    stage2_steps: int = opt(
        30,
        "GRPO steps with R_out = F1 (RL phase 1; not in the paper: 30 + 30 steps fit ten seeds in the cpu budget)",
        ge=0,
        le=10**6,
    )
    stage3_steps: int = opt(30, "GRPO steps of RL phase 2, F1 + path for EoG (as stage2_steps)", ge=0, le=10**6)
    prompts_per_step: int = opt(8, "questions Q per GRPO step (run_eog.sh: 256; CPU-sized)", ge=1, le=4096)
    group_size: int = opt(6, "rollouts G per question (run_eog.sh: rollout.n=6)", ge=2, le=1024)
    rl_lr: float = opt(3e-4, "GRPO AdamW learning rate, every RL arm (run_eog.sh: 4e-6 on Qwen-7B)", gt=0, le=1)
    temperature: float = opt(1.0, "rollout temperature (run_eog.sh: 1.0)", gt=0, le=10)
    clip_eps: float = opt(0.2, "ratio clip ε (run_eog.sh: clip_ratio_low 0.2)", gt=0, lt=1)
    max_new_tokens: int = opt(48, "completion cap in tokens (longest synthetic trace: 41 + <eos>)", ge=1, le=2048)
    confidence: float = opt(
        0.95,
        "one-sided confidence of the paired t-tests across seeds (fixed before any run; the usual 5% level)",
        ge=0.5,
        lt=1,
    )
    min_gain: float = opt(
        0.0, "a gain passes when its lower confidence bound exceeds this (the claim is 'beats')", ge=-1, le=1
    )
    f1_tolerance: float = opt(
        0.05,
        "largest F1 loss of EoG vs GRPO(F1) still 'without lowering F1' (fixed before any run: 5 F1 points; the "
        "paper gives no number)",
        ge=0,
        le=1,
    )
    min_valid: float = opt(
        0.5,
        "gate: share of the SFT start's test outputs that must parse, or RL gets no reward to learn from (fixed "
        "before any run; not in the paper)",
        ge=0,
        le=1,
    )
    min_rl_gain: float = opt(
        0.0,
        "gate: the lower confidence bound of GRPO(F1)'s pooled F1 gain over the SFT start must exceed this, or RL did "
        "not move the policy and no RL arm's comparison means anything (fixed before any run; 0 = any gain)",
        ge=-1,
        le=1,
    )
    smollm2_check: bool = opt(
        False,
        "tinylm backend: also run the pipeline briefly on SmolLM2 (reported, not in the verdict; off by default: ten "
        "seeds fill the cpu budget, and tests/eog/test_eog_pretrained.py runs the same code on SmolLM2)",
    )
    check_sft_steps: int = opt(3, "SmolLM2 check: SFT steps (batch 2)", ge=1, le=1000)
    check_prompts: int = opt(2, "SmolLM2 check: questions per GRPO step", ge=1, le=64)
    check_group: int = opt(4, "SmolLM2 check: rollouts per question", ge=2, le=64)
    lora_r: int = opt(8, "LoRA rank (smollm2; not in the paper, which fine-tunes fully)", ge=1, le=1024)
    pretrained_sft_steps: int = opt(
        300,
        "smollm2: stage-1 SFT steps of the LoRA adapters (not in the paper, which fine-tunes fully)",
        ge=1,
        le=10**6,
    )
    pretrained_sft_batch: int = opt(16, "smollm2: traces per SFT step (run_cwq_sft.sh: 16)", ge=1, le=4096)
    pretrained_sft_lr: float = opt(2e-4, "smollm2 SFT learning rate (LoRA; not in the paper)", gt=0, le=1)
    pretrained_rl_lr: float = opt(2e-5, "smollm2 GRPO learning rate (LoRA; not in the paper)", gt=0, le=1)
    pretrained_max_new_tokens: int = opt(
        96, "smollm2 completion cap (the synthetic traces need ~70 SmolLM2 tokens)", ge=1, le=4096
    )
    device: str = opt(
        "cpu",
        "torch device of either backend: cpu, cuda, cuda:N or auto (gpu preset: cuda)",
    )
    rollout_seeds: RolloutSeeds = rollout_seeds_field()
    parallel: Parallel = parallel_field()

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "n_seeds": 1,
            "n_sft": 40,
            "n_rl": 40,
            "n_test": 12,
            "d_model": 32,
            "d_ff": 64,
            "sft_steps": 20,
            "sft_batch": 8,
            "stage2_steps": 2,
            "stage3_steps": 2,
            "prompts_per_step": 2,
            "group_size": 3,
        },
        "gpu": {
            "backend": "smollm2",
            "n_seeds": 5,
            "kg_scale": 2.0,
            "n_sft": 500,
            "n_rl": 800,
            "n_test": 150,
            "stage2_steps": 150,
            "stage3_steps": 150,
            "prompts_per_step": 16,
            "group_size": 6,
            "lora_r": 16,
            "device": "cuda",
        },
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.d_model % self.n_heads == 0, "n_heads", f"must divide d_model={self.d_model}")
        require((self.d_model // self.n_heads) % 2 == 0, "n_heads", "d_model / n_heads must be even (RoPE)")
        check_parallel(self.parallel, self.backend)
        if self.data is not None:
            self._check_data()

    def _check_data(self) -> None:
        try:
            examples = load_rog_jsonl(self.data, require_path=True)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"config field 'data': {exc}") from None
        comps = {e.composition for e in examples}
        require(len(comps) >= 2, "data", f"needs questions of at least 2 path compositions, found {len(comps)}")
        require(len(examples) >= 8, "data", f"needs at least 8 questions, found {len(examples)}")
        if self.backend == "tinylm":
            longest = max(len(tokenize(compact_prompt(e))) for e in examples)
            require(
                longest + self.max_new_tokens <= 1024,
                "data",
                f"a prompt has {longest} word pieces, too long for the tiny LM (1024 with the completion); "
                "use --set backend=smollm2",
            )

    #: A slice of the gpu preset (the same model, batches and completion length; fewer steps, seeds and test
    #: questions), timed by the device check.
    GPU_SLICE: ClassVar[dict[str, Any]] = {
        "n_seeds": 1,
        "n_test": 16,
        "pretrained_sft_steps": 4,
        "stage2_steps": 2,
        "stage3_steps": 2,
    }

    def work(self) -> float:
        """Sequences trained on or decoded in all: the shared SFT start's traces; per seed, the imitation traces and
        every RL stage's rollouts; the greedy evaluation of both test splits by every unit."""
        pretrained = self.backend == "smollm2"
        sft = self.pretrained_sft_steps * self.pretrained_sft_batch if pretrained else self.sft_steps * self.sft_batch
        per_update = self.prompts_per_step * self.group_size
        imitation = (self.stage2_steps + self.stage3_steps) * per_update
        rl = (self.stage2_steps + 3 * self.stage3_steps) * per_update
        evaluations = (1 + 5 * self.n_seeds) * 2 * self.n_test
        return float(sft + self.n_seeds * (imitation + rl) + evaluations)
