"""The config of the DNA reproduction (``iclr26 run dna``): corpus, small translator, arms, verdict thresholds.

Divide and Abstract: Autoformalization via Decomposition and Abstraction Learning, ICLR 2026, OpenReview
NjgaeXNit3. Defaults are the ``cpu`` scale; ``SCALES`` holds ``smoke`` and ``gpu``. Every field states its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from iclr26.common.config import ConfigError, ExperimentConfig, opt, require
from iclr26.common.model_files import model_problem


@dataclass(frozen=True)
class DNAConfig(ExperimentConfig):
    """DNA vs direct translation and the ablations on a generated corpus; defaults are the ``cpu`` scale."""

    n_train: int = opt(900, "training statements of the small translator's parallel corpus (not in the paper, "
                       "which trains nothing; sized for one CPU thread)", ge=1, le=10**6)  # fmt: skip
    n_test: int = opt(160, "test statements for the small translator, the paired axis of the verdict (paper: 100 "
                      "core + 40 complex LeanEuclidPlus problems [unverified]); 160 detects a 10-point gain",
                      ge=1, le=10**5)  # fmt: skip
    train_max_clauses: int = opt(4, "longest training statement in clauses (the length split's boundary; not in "
                                 "the paper)", ge=2, le=64)  # fmt: skip
    test_max_clauses: int = opt(7, "longest test statement in clauses (LeanEuclidPlus's 'complex' problems are "
                                "the long ones; not in the paper)", ge=2, le=64)  # fmt: skip
    concept_prob: float = opt(0.5, "probability that a clause uses a shared concept (not in the paper; "
                              "abstractions pay off when concepts recur)", ge=0, le=1)  # fmt: skip
    held_out: tuple[str, ...] = opt(("diameter", "oppositeSides", "outside"), "concepts absent from the "
                                    "translator's training statements (the unseen-concept split; not in the "
                                    "paper); at least one")  # fmt: skip
    doc_pairs: int = opt(12, "library documentation pairs per concept in the translator's corpus (random variable "
                         "names; not in the paper)", ge=0, le=10_000)  # fmt: skip
    steps: int = opt(1500, "optimizer steps of the small translator (not in the paper)", ge=1, le=10**7)
    batch_size: int = opt(32, "sequences per step (not in the paper)", ge=1, le=65_536)
    lr: float = opt(3e-3, "AdamW peak learning rate, cosine decay (not in the paper; usual for small LMs)", gt=0,
                    le=1)  # fmt: skip
    d_model: int = opt(64, "small translator width (not in the paper; sized for one CPU thread)", ge=1, le=16_384)
    n_layers: int = opt(3, "small translator blocks (not in the paper)", ge=1, le=256)
    n_heads: int = opt(4, "attention heads (not in the paper)", ge=1, le=256)
    temperature: float = opt(0.8, "sampling temperature of the small translator's resamples and repairs (not in "
                             "the paper; its 0.2 is for LLMs)", gt=0, le=100)  # fmt: skip
    max_new_statement: int = opt(400, "most tokens of a whole-statement reply (an expanded 7-clause statement can "
                                 "have ~300 word tokens; the context is 640)", ge=1, le=640)  # fmt: skip
    max_new_clause: int = opt(64, "most tokens of a clause or quantifier reply (an expanded concept has <= 60)",
                              ge=1, le=640)  # fmt: skip
    refine_calls: int = opt(2, "calls per statement beyond one pass of the clause tree (clauses + 1); every arm "
                            "gets the same budget (the same number of model calls per statement)", ge=0,
                            le=1000)  # fmt: skip
    library_repairs: int = opt(2, "Phase I repair rounds per definition (the paper's compile-and-repair; not "
                               "numbered there)", ge=0, le=1000)  # fmt: skip
    z3_rlimit: int = opt(5_000_000, "z3 resource limit (rlimit, a count of solver steps, the same on any machine) "
                         "per validator or equivalence query; past it the query is 'unknown', which counts as not "
                         "proved. The largest query of the generated cpu corpus uses ~7e4; 5e6 is ~1.5 s of one "
                         "idle core (z3's own rlimit, chosen so no load on the machine changes an answer)",
                         ge=1, le=10**10)  # fmt: skip
    pretrained_arm: bool = opt(True, "also run the four arms with SmolLM2-135M-Instruct few-shot")
    n_pretrained: int = opt(6, "test statements for SmolLM2 (its calls dominate the CPU budget: ~1.6 s per clause "
                            "call, ~4 s per statement call on one thread, measured with "
                            "benchmarks/dna_throughput.py)", ge=1, le=10**5)  # fmt: skip
    pretrained_refine_calls: int = opt(0, "SmolLM2's calls per statement beyond one pass of the clause tree, equal "
                                       "for its four arms (0: a whole-statement call costs ~4 CPU s)", ge=0,
                                       le=1000)  # fmt: skip
    pretrained_max_clauses: int = opt(4, "longest statement given to SmolLM2 (not in the paper)", ge=2, le=64)
    few_shot: int = opt(3, "few-shot examples per request kind in SmolLM2's prompt (paper: a 1-shot example of the "
                        "full pipeline [unverified])", ge=1, le=100)  # fmt: skip
    pretrained_temperature: float = opt(0.2, "SmolLM2's sampling temperature for resamples (paper: 0.2 for "
                                        "non-reasoning models [unverified])", gt=0, le=100)  # fmt: skip
    model: Path | None = opt(None, "a .gguf file or Hugging Face folder instead of SmolLM2-135M-Instruct (checked "
                             "before any work)")  # fmt: skip
    confidence: float = opt(0.95, "one-sided confidence of the paired lower bounds (convention; fixed before the "
                            "first run)", gt=0.5, lt=1)  # fmt: skip
    gain_margin: float = opt(0.0, "mean accuracy gain of DNA over each comparison arm (direct, decomposition only, "
                             "placebo library) that must be exceeded (the claim is 'improves'; fixed before the "
                             "first run)", ge=0, lt=1)  # fmt: skip
    min_competence: float = opt(0.2, "gate: the best arm's accuracy on statements of training length (<= "
                                "train_max_clauses) must reach this, else the translator learned too little for "
                                "any arm to show a gain (not in the paper; fixed before the new rule's first "
                                "record)", ge=0, le=1)  # fmt: skip
    min_library_correct: float = opt(0.5, "gate: share of learned library definitions z3 proves equal to the gold "
                                     "ones that must be reached, else DNA's abstractions are not there to help (the "
                                     "paper reports 97-100% per-step accuracy [unverified]; 0.5 is our bar)",
                                     ge=0, le=1)  # fmt: skip
    max_direct_accuracy: float = opt(0.9, "gate: direct translation's accuracy must stay below this, else there "
                                     "is no room for a gain (not in the paper; fixed before the new rule's first "
                                     "record)", gt=0, le=1)  # fmt: skip
    data: Path | None = opt(None, "JSONL test statements ({id, informal, formal}; see corpus.py), replacing the "
                            "generated test set; the training corpus is still generated")  # fmt: skip

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"n_train": 40, "n_test": 6, "steps": 3, "batch_size": 4, "d_model": 16, "n_layers": 1,
                  "n_heads": 2, "doc_pairs": 1, "test_max_clauses": 4, "pretrained_arm": False, "refine_calls": 1,
                  "library_repairs": 0, "max_new_statement": 4, "max_new_clause": 4},
        "gpu": {"n_train": 5000, "n_test": 600, "steps": 8000, "d_model": 128, "n_layers": 4, "n_pretrained": 140,
                "pretrained_refine_calls": 2, "test_max_clauses": 8},
    }  # fmt: skip
    CPU_BOUND: ClassVar[str | None] = (
        "the validator and equivalence checker are z3 (CPU) and the translators are small; the gpu preset is a "
        "larger corpus and model on the CPU"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        from iclr26.dna.corpus import CONCEPTS

        require(self.test_max_clauses >= self.train_max_clauses, "test_max_clauses",
                f"must be >= train_max_clauses={self.train_max_clauses}, got {self.test_max_clauses}")  # fmt: skip
        require(self.d_model % self.n_heads == 0 and (self.d_model // self.n_heads) % 2 == 0, "n_heads",
                f"must divide d_model={self.d_model} into even head widths")  # fmt: skip
        require(len(self.held_out) > 0, "held_out", "name at least one concept (the unseen-concept split); known: "
                + ", ".join(CONCEPTS))  # fmt: skip
        unknown = [c for c in self.held_out if c not in CONCEPTS]
        require(not unknown, "held_out", f"unknown concepts {unknown}; known: {', '.join(CONCEPTS)}")
        require(len(self.held_out) < len(CONCEPTS), "held_out", "must leave at least one concept for training")
        if self.model is not None:
            problem = model_problem(self.model)
            require(problem is None, "model", str(problem))
        if self.data is not None:
            from iclr26.dna.corpus import load_jsonl

            try:
                load_jsonl(self.data)
            except (ValueError, FileNotFoundError) as err:
                raise ConfigError(f"config field 'data': {err}") from None
