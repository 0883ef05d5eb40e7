"""The DNA verdict: DNA formalizes more statements correctly than direct translation, than decomposition alone, and
than DNA with a placebo library, each paired over the same test statements.

The rule (thresholds are config fields with sources; fixed before the record that first used it):

- **gates** (the test bed can show the effect): ``translator_competent``, the best arm's accuracy on statements of
  training length reaches ``min_competence``; ``library_learned``, the share of learned library definitions z3
  proves equal to the gold ones reaches ``min_library_correct``; ``direct_not_saturated``, direct translation's
  accuracy is below ``max_direct_accuracy``;
- **comparisons**, each over the per-statement differences d_i = correct_DNA − correct_other (0/1 each): the mean
  exceeds ``gain_margin`` and its one-sided ``confidence`` paired-t lower bound is above 0, against ``direct`` (the
  paper's baseline), ``decompose`` (the paper's Divide-only ablation) and ``dna_placebo`` (the control: DNA with a
  library whose definitions are wrong but whose names, signatures and documentation are kept, which must not
  reach DNA; without it a gain could come from decomposition or from the names alone).

Held when every gate passes and all three comparisons pass; not held when the gates pass and one fails;
inconclusive when a gate fails. Reported, not judged: the abstraction-only ablation, each arm against direct, and
the trend of DNA's gain over direct with statement length (an OLS slope; the paper does not claim it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.dna.config import DNAConfig

#: The arms the verdict reads, in the record's order; ``dna_placebo`` is the control.
JUDGED_ARMS = ("direct", "abstract", "decompose", "dna", "dna_placebo")
#: DNA is compared with each of these (the claim and its control).
CLAIM_BASELINES = ("direct", "decompose", "dna_placebo")
THRESHOLDS = ("gain_margin", "confidence", "min_competence", "min_library_correct", "max_direct_accuracy")


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured for the small translator, as plain per-statement numbers.

    Attributes:
        correct: arm -> per test statement (the same order for every arm), whether z3 proved the arm's output
            equivalent to the gold formalization; must hold every arm of :data:`JUDGED_ARMS`.
        lengths: per test statement, its clause count.
        library_correct: learned library definitions z3 proves equal to the gold ones.
        library_size: concepts the library had to learn.
    """

    correct: dict[str, list[bool]]
    lengths: list[int]
    library_correct: int
    library_size: int

    def __post_init__(self) -> None:
        missing = [a for a in JUDGED_ARMS if a not in self.correct]
        if missing:
            raise ValueError(f"Measurements.correct lacks the arms {missing}; it needs {list(JUDGED_ARMS)}")
        if any(len(v) != len(self.lengths) for v in self.correct.values()) or not self.lengths:
            raise ValueError("Measurements: every arm needs one value per test statement (and at least one)")

    def accuracy(self, arm: str, *, max_clauses: int | None = None) -> float:
        """Mean accuracy of ``arm``, over statements of at most ``max_clauses`` clauses when given (0 if none)."""
        xs = [
            c for c, n in zip(self.correct[arm], self.lengths, strict=True) if max_clauses is None or n <= max_clauses
        ]
        return float(np.mean(xs)) if xs else 0.0


@dataclass(frozen=True)
class Comparison:
    """Paired test over statements of d_i = x_i − y_i (accuracy 0/1 each).

    Attributes:
        n: statements.
        mean: mean gain.
        lower_bound: one-sided lower confidence bound of the mean (paired t).
        ci95_halfwidth: 95% two-sided half-width.
        passes: mean > margin and lower bound > 0.
    """

    n: int
    mean: float
    lower_bound: float
    ci95_halfwidth: float
    passes: bool


def compare(x: list[bool], y: list[bool], *, margin: float, confidence: float) -> Comparison:
    """The paired gain test of ``x`` over ``y`` (module docstring)."""
    d = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    t = paired_t(d, level=0.95, confidence=confidence, moments="exact")
    return Comparison(len(d), float(t.mean), float(t.lower), float(t.half_width),
                      bool(t.mean > margin and t.lower > 0))  # fmt: skip


def trend(x: list[bool], y: list[bool], lengths: list[int], *, confidence: float) -> dict[str, float]:
    """The OLS slope of d_i = x_i − y_i on the clause count and its one-sided lower bound (t, n − 2 df); reported.

    A flat fit (no spread in d) is slope 0 with bound 0; fewer than three statements or one length: bound −inf.
    """
    from scipy import stats

    d = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    length = np.asarray(lengths, dtype=float)
    if len(d) < 3 or np.ptp(length) == 0:
        return {"slope": 0.0, "slope_lower_bound": float("-inf")}
    if np.ptp(d) == 0:  # no spread: a flat fit, exactly (linregress would give nan)
        return {"slope": 0.0, "slope_lower_bound": 0.0}
    fit = stats.linregress(length, d)
    return {"slope": float(fit.slope),
            "slope_lower_bound": float(fit.slope - stats.t.ppf(confidence, len(d) - 2) * fit.stderr)}  # fmt: skip


def gates(m: Measurements, config: DNAConfig) -> list[Gate]:
    """The test bed's gates (module docstring)."""
    short = {a: m.accuracy(a, max_clauses=config.train_max_clauses) for a in JUDGED_ARMS if a != "dna_placebo"}
    share = m.library_correct / m.library_size if m.library_size else 0.0
    direct = m.accuracy("direct")
    return [
        Gate("translator_competent", max(short.values()) >= config.min_competence,
             {"accuracy_at_training_length": short, "min_competence": config.min_competence}),
        Gate("library_learned", share >= config.min_library_correct,
             {"correct_definitions": m.library_correct, "definitions": m.library_size, "share": share,
              "min_library_correct": config.min_library_correct}),
        Gate("direct_not_saturated", direct < config.max_direct_accuracy,
             {"direct_accuracy": direct, "max_direct_accuracy": config.max_direct_accuracy}),
    ]  # fmt: skip


def verdict(m: Measurements, config: DNAConfig) -> Verdict:
    """The claim check (module docstring).

    Args:
        m: per-statement correctness of every arm, the statements' lengths and the library's correctness.
        config: ``gain_margin``, ``confidence`` and the gates' thresholds.

    Returns:
        The :class:`~iclr26.common.verdict.Verdict`; its evidence holds the three judged comparisons, the reported
        ones, the length trend and the thresholds with their sources.
    """

    def cmp(a: str, b: str) -> Comparison:
        return compare(m.correct[a], m.correct[b], margin=config.gain_margin, confidence=config.confidence)

    judged = {f"dna_vs_{b}": cmp("dna", b) for b in CLAIM_BASELINES}
    reported = {f"{a}_vs_direct": asdict(cmp(a, "direct")) for a in ("abstract", "decompose", "dna_placebo")}
    reported["dna_vs_abstract"] = asdict(cmp("dna", "abstract"))
    evidence: dict[str, Any] = {
        **{k: asdict(c) for k, c in judged.items()},
        "control_fails": judged["dna_vs_dna_placebo"].passes,
        "reported": reported,
        "gain_over_direct_by_length": trend(m.correct["dna"], m.correct["direct"], m.lengths,
                                            confidence=config.confidence),
        "n_statements": len(m.lengths),
        "thresholds": {n: threshold(config, n) for n in THRESHOLDS},
    }  # fmt: skip
    acc = {a: m.accuracy(a) for a in JUDGED_ARMS}
    parts = ", ".join(f"vs {b} {judged[f'dna_vs_{b}'].mean:+.1%} (lower bound {judged[f'dna_vs_{b}'].lower_bound:+.1%})"
                      for b in CLAIM_BASELINES)  # fmt: skip
    measurement = (
        f"small translator, {len(m.lengths)} statements, equal call budgets: accuracy DNA {acc['dna']:.1%}, direct "
        f"{acc['direct']:.1%}, decompose {acc['decompose']:.1%}, abstract {acc['abstract']:.1%}, placebo library "
        f"{acc['dna_placebo']:.1%}; DNA's paired gain {parts}"
    )
    held = all(c.passes for c in judged.values())
    return Verdict.decide(gates(m, config), held=held, evidence=evidence, measurement=measurement)
