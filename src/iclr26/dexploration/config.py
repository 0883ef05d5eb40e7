"""The config of the DExploration reproduction (``iclr26 run dexploration``): corpus, agents, budgets, thresholds.

Defaults are the ``cpu`` scale; ``SCALES`` holds ``smoke`` and ``gpu``. Every field states its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from iclr26.common.config import ConfigError, ExperimentConfig, opt


@dataclass(frozen=True)
class DExplorationConfig(ExperimentConfig):
    """DExploration vs Conjecture-then-Prove on a generated proof corpus; defaults are the ``cpu`` scale."""

    n_seeds: int = opt(
        4,
        "seeds (corpus, training and sampling draws) for the paired tests over seeds; the "
        "paper's gap (2726 vs 1164 valid of 5,000 against Conjecture-Prover) needs few",
        ge=1,
        le=1000,
    )
    n_proofs: int = opt(
        2000,
        "forward proofs in the generated corpus per seed (paper: 39,509 trajectories from "
        "NuminaMath-Lean [unverified]; sized for 2 CPU cores)",
        ge=1,
        le=10**7,
    )
    max_vars: int = opt(3, "most variables of a generated proof (not in the paper; the language has 4)", ge=2, le=4)
    max_hyps: int = opt(3, "most hypotheses of a generated proof (not in the paper)", ge=2, le=64)
    max_steps: int = opt(3, "most steps of a generated proof (not in the paper)", ge=2, le=64)
    max_degree: int = opt(2, "largest degree of a derived fact (not in the paper; products of two bounds)", ge=2, le=8)
    backward_prob: float = opt(
        0.3,
        "share of proofs written with a backward 'suffices' step, which deductive rewriting removes (not in the paper)",
        ge=0,
        le=1,
    )
    train_steps: int = opt(200, "optimizer steps per agent, equal for every arm (same training budget)", ge=1)
    batch_size: int = opt(32, "sequences per step (not in the paper)", ge=1, le=65_536)
    lr: float = opt(3e-3, "AdamW peak learning rate, cosine decay (not in the paper; usual for small GRUs)", gt=0, le=1)
    d_embed: int = opt(32, "token embedding width (not in the paper)", ge=1, le=16_384)
    d_hidden: int = opt(
        128, "GRU hidden width, equal for every arm (paper: an 8B prover; sized for the CPU)", ge=1, le=16_384
    )
    n_layers: int = opt(1, "GRU layers (not in the paper)", ge=1, le=64)
    n_episodes: int = opt(
        60,
        "DExplorer episodes per arm and seed (paper: 5,000 per method [unverified]); "
        "Conjecture-then-Prove samples until it has spent DExplorer's tokens",
        ge=1,
        le=10**6,
    )
    max_actions: int = opt(
        40, "most proposed actions per exploration episode (paper: 80 steps [unverified])", ge=1, le=10_000
    )
    temperature: float = opt(1.0, "sampling temperature of every arm (not in the paper)", gt=0, le=100)
    kernel_rlimit: int = opt(
        2_000_000,
        "z3 resource limit (rlimit) per kernel query, about 0.4 s of one core; past "
        "it the action is rejected; a resource count, not wall-clock, so machine load cannot "
        "change an answer (not in the paper, whose kernel is Lean 4)",
        ge=1,
        le=10**12,
    )
    prover_depth: int = opt(
        2,
        "forward-chaining levels of the baseline's bounded prover (the corpus's proofs "
        "need at most max_steps - 1 levels before the last linear step)",
        ge=1,
        le=16,
    )
    prover_max_facts: int = opt(120, "most facts the bounded prover keeps (not in the paper)", ge=2, le=10**6)
    ctp_batch: int = opt(
        64,
        "conjectures sampled per batch while Conjecture-then-Prove resamples up to its token "
        "budget (speed only; the draws are the same sequence per seed)",
        ge=1,
        le=65_536,
    )
    difficulty_k: int = opt(4, "k of z3 pass@k in the difficulty measure (paper: Pass@4 and Pass@64)", ge=1, le=1024)
    difficulty_rlimit: int = opt(
        1_000_000,
        "z3 resource limit per difficulty attempt, about 0.2 s of one core (not in the paper)",
        ge=1,
        le=10**12,
    )
    coq_time_limit_s: int = opt(
        10, "Coq timeout of each lia/nia call in a certificate (not in the paper)", ge=1, le=86_400
    )
    bare_time_limit_s: int = opt(
        2,
        "Coq timeout of lia/nia on a bare statement (the reported hard share; not "
        "judged, since a wall-clock limit may answer differently on a loaded machine)",
        ge=1,
        le=86_400,
    )
    coqc_timeout_s: int = opt(
        600,
        "wall-clock limit of one coqc call; a call past it accepts nothing (a "
        "batch of certificates compiles in seconds)",
        ge=1,
        le=86_400,
    )
    staged_arm: bool = opt(True, "also train and run the Staged ablation (paper: 2340 valid vs 2726 interleaved)")
    confidence: float = opt(
        0.95, "one-sided confidence of the paired lower bounds (convention; fixed before the first run)", gt=0.5, lt=1
    )
    yield_margin: float = opt(
        0.0,
        "seed-mean gain over Conjecture-then-Prove, in distinct valid (and in "
        "distinct non-linear valid) statements per 1,000 sampled tokens, that must be "
        "exceeded (the claim is 'more valid statements at lower cost'; fixed before the "
        "first run)",
        ge=0,
        le=1000,
    )
    coq_accept_min: float = opt(
        1.0,
        "share of DExplorer outputs coqc must accept (every output: the paper's guaranteed provability)",
        gt=0,
        le=1,
    )
    ctp_min_wellformed: int = opt(
        10,
        "gate: well-formed conjectures Conjecture-then-Prove must write on every "
        "seed within its token budget, so its yield is measured on statements and not "
        "on syntax errors (not in the paper, whose baseline is an LLM that writes statements; our bar, fixed "
        "before the first run)",
        ge=1,
        le=10**6,
    )
    data: Path | None = opt(
        None,
        "a JSONL corpus of forward proofs in this module's format (see corpus.py; the "
        "paper's Lean 4 data cannot be checked here); replaces the generated corpus",
    )

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "n_seeds": 1,
            "n_proofs": 60,
            "train_steps": 4,
            "batch_size": 8,
            "d_embed": 8,
            "d_hidden": 16,
            "n_episodes": 4,
            "max_actions": 4,
            "prover_max_facts": 20,
            "staged_arm": False,
            "ctp_min_wellformed": 1,
        },
        "gpu": {
            "n_seeds": 10,
            "n_proofs": 20000,
            "train_steps": 3000,
            "d_hidden": 256,
            "n_layers": 2,
            "n_episodes": 500,
            "max_actions": 80,
            "max_steps": 4,
        },
    }
    CPU_BOUND: ClassVar[str | None] = (
        "the kernel (z3) and the certificates (coqc) are CPU programs and the agent is a small GRU; the gpu preset "
        "is a larger corpus, agent and episode count on the CPU"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.data is not None:
            from iclr26.dexploration.corpus import load_jsonl
            from iclr26.dexploration.kernel import Z3Kernel

            try:
                load_jsonl(self.data, kernel=Z3Kernel(rlimit=self.kernel_rlimit))
            except ValueError as err:
                raise ConfigError(f"config field 'data': {err}") from None
