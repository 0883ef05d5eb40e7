"""The RLAF verdict: learned guidance cuts the unguided solver's decisions, beats a one-line rule, and a shuffled
copy of it does not.

The rule (fixed before the runs; thresholds are config fields with sources), on the project's CDCL (the full
injection mechanism) and for every family and test set:

- **gate** ``instances_not_trivial``: the unguided solver's mean decisions on every set are at least
  ``min_unguided_decisions`` (a set solved by propagation alone leaves guidance nothing to save);
- **gate** ``guidance_acts``: on every set, at least ``min_acting_fraction`` of the (formula, seed) pairs get a
  decision count under RLAF's guidance other than the unguided one (the zero-initialised policy reproduces the
  unguided search exactly, so an unmoved policy scores 0);
- **ratio**: the mean over seeds of ``mean decisions (RLAF) / mean decisions (unguided)`` is at most ``1 − margin``;
- **against the degree heuristic**: a paired test over formulas of ``log(1 + decisions)`` (each method's averaged
  over its seeds) whose one-sided ``confidence`` lower bound of RLAF's gain is above 0;
- **control that must fail**: RLAF's own weights and polarities, shuffled over the variables of each formula
  (:func:`~iclr26.rlaf.guidance.shuffled_guidance`), must miss the ratio bound on every set, so that passing it
  says the per-variable guidance matters and not only the distribution of its values.

Held when both gates pass, RLAF meets the ratio and beats the degree heuristic on every set, and the control fails
on every set; not held when the gates pass and any of these does not; inconclusive when a gate fails. RLAF against
the supervised baseline and the degree heuristic against the unguided solver are tested the same way and reported;
with ``data=DIR`` holding several sub-folders, every method's ratio per sub-folder is reported beside the pooled one.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.rlaf.config import RLAFConfig

#: The arms evaluated on every set: the unguided solver, the degree heuristic, the supervised baseline, RLAF's mode
#: and the control (RLAF's mode shuffled over the variables).
METHODS = ("unguided", "degree", "supervised", "rlaf", "shuffled")
GUIDED = METHODS[1:]


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured on the CDCL, as plain numbers.

    Attributes:
        decisions: set (``"<family>/<size>"`` or ``"<family>/data"``) → method (:data:`METHODS`) → one list per
            training seed of the decisions per formula (the unguided solver and the degree heuristic are
            deterministic and repeat for every seed).
        subfolders: set → sub-folder of ``data`` → the indices of its formulas; empty unless ``data`` holds several.
    """

    decisions: dict[str, dict[str, list[list[int]]]]
    subfolders: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.decisions:
            raise ValueError("Measurements.decisions must hold at least one set")
        for name, runs in self.decisions.items():
            missing = [m for m in METHODS if m not in runs]
            if missing:
                raise ValueError(f"Measurements.decisions[{name!r}] lacks the methods {missing} (needs {METHODS})")
            shapes = {m: np.shape(runs[m]) for m in METHODS}
            if len(set(shapes.values())) != 1 or len(shapes["rlaf"]) != 2 or 0 in shapes["rlaf"]:
                raise ValueError(
                    f"Measurements.decisions[{name!r}]: every method needs the same non-empty seeds x formulas, "
                    f"got {shapes}"
                )
        for name in self.subfolders:
            if name not in self.decisions:
                raise ValueError(f"Measurements.subfolders names the set {name!r}, which decisions lacks")

    def ratio(self, name: str, method: str, formulas: list[int] | None = None) -> float:
        """Mean over seeds of ``mean decisions (method) / mean decisions (unguided)`` on set ``name`` (on the given
        formula indices only, when given)."""
        runs = self.decisions[name]
        pick = (lambda row: row) if formulas is None else (lambda row: [row[i] for i in formulas])
        return statistics.fmean(
            float(np.mean(pick(m))) / max(float(np.mean(pick(u))), 1e-9)
            for m, u in zip(runs[method], runs["unguided"], strict=True)
        )


def paired_gain(method: list[list[int]], baseline: list[list[int]], *, confidence: float) -> dict[str, Any]:
    """Paired test over formulas of ``d = log(1 + decisions_baseline) − log(1 + decisions_method)``.

    Each side is first averaged over its seeds per formula, in log space. The method beats the baseline when the
    one-sided ``confidence`` lower bound of mean ``d`` is above 0; ``exp(mean d)`` is the geometric-mean factor of
    fewer decisions.

    Args:
        method: one list per seed of the method's decisions per formula.
        baseline: the same for the baseline (the formulas in the same order).
        confidence: the one-sided bound's confidence.
    """
    test = paired_t(_log_decisions(baseline), _log_decisions(method), confidence=confidence)
    return {
        "formulas": test.n,
        "mean_log_gain": test.mean,
        "ci95": [test.ci_low, test.ci_high],
        "lower_bound": test.lower,
        "p_greater": test.p_greater,
        "geomean_factor": float(np.exp(test.mean)),
        "beats": bool(test.lower > 0),
    }


def _log_decisions(runs: list[list[int]]) -> np.ndarray:
    """``(F,)`` log(1 + decisions) per formula, averaged over the seeds' runs (rows)."""
    return np.log1p(np.asarray(runs, dtype=float)).mean(axis=0)


def _gates(m: Measurements, config: RLAFConfig) -> list[Gate]:
    unguided = {name: float(np.mean(runs["unguided"][0])) for name, runs in m.decisions.items()}
    acting = {
        name: float(np.mean(np.asarray(runs["rlaf"]) != np.asarray(runs["unguided"])))
        for name, runs in m.decisions.items()
    }
    return [
        Gate(
            "instances_not_trivial",
            all(v >= config.min_unguided_decisions for v in unguided.values()),
            {"unguided_mean_decisions": unguided, "min_unguided_decisions": config.min_unguided_decisions},
        ),
        Gate(
            "guidance_acts",
            all(v >= config.min_acting_fraction for v in acting.values()),
            {"fraction_changed_by_rlaf": acting, "min_acting_fraction": config.min_acting_fraction},
        ),
    ]


def verdict(m: Measurements, config: RLAFConfig) -> Verdict:
    """The claim check (module docstring).

    Args:
        m: the CDCL's decisions per set, method, seed and formula (and the sub-folders of ``data``).
        config: ``margin``, ``confidence``, ``min_unguided_decisions``, ``min_acting_fraction`` (and
            ``train_seeds`` for the text).

    Returns:
        The :class:`~iclr26.common.verdict.Verdict`; its evidence holds every method's ratios, the paired tests,
        the control's outcome, the per-sub-folder ratios and the thresholds with their sources.
    """
    bound = 1.0 - config.margin
    ratios = {method: {name: m.ratio(name, method) for name in m.decisions} for method in GUIDED}
    paired = {
        name: {
            "rlaf_vs_degree": paired_gain(runs["rlaf"], runs["degree"], confidence=config.confidence),
            "rlaf_vs_supervised": paired_gain(runs["rlaf"], runs["supervised"], confidence=config.confidence),
            "degree_vs_unguided": paired_gain(runs["degree"], runs["unguided"], confidence=config.confidence),
        }
        for name, runs in m.decisions.items()
    }
    ratio_part = all(r <= bound for r in ratios["rlaf"].values())
    degree_part = all(p["rlaf_vs_degree"]["beats"] for p in paired.values())
    control_failed = all(r > bound for r in ratios["shuffled"].values())
    by_subfolder = {
        name: {group: {method: m.ratio(name, method, idx) for method in GUIDED} for group, idx in groups.items()}
        for name, groups in m.subfolders.items()
    }
    evidence = {
        "rlaf_over_unguided_cdcl": ratios["rlaf"],
        "shuffled_over_unguided_cdcl": ratios["shuffled"],
        "degree_over_unguided_cdcl": ratios["degree"],
        "supervised_over_unguided_cdcl": ratios["supervised"],
        "threshold": bound,
        "ratio_part_held": ratio_part,
        "degree_part_held": degree_part,
        "control_failed": control_failed,
        "paired_over_formulas_cdcl": paired,
        "over_unguided_cdcl_by_subfolder": by_subfolder,
        "thresholds": {
            name: threshold(config, name)
            for name in ("margin", "confidence", "degree_scale", "min_unguided_decisions", "min_acting_fraction")
        },
    }
    return Verdict.decide(
        _gates(m, config),
        held=ratio_part and degree_part and control_failed,
        evidence=evidence,
        measurement=_measurement(ratios, paired, by_subfolder, config),
    )


def _measurement(
    ratios: dict[str, dict[str, float]],
    paired: dict[str, dict[str, dict[str, Any]]],
    by_subfolder: dict[str, dict[str, dict[str, float]]],
    config: RLAFConfig,
) -> str:
    """The report's one line: RLAF's and the control's ratios, RLAF against the degree heuristic, sub-folders."""
    degree = ", ".join(
        f"{k} x{p['rlaf_vs_degree']['geomean_factor']:.2f} ({'beats' if p['rlaf_vs_degree']['beats'] else 'not shown'})"
        for k, p in paired.items()
    )
    groups = "; ".join(
        f"{name} by sub-folder: " + ", ".join(f"{g} {r['rlaf']:.2f}" for g, r in by_group.items())
        for name, by_group in by_subfolder.items()
    )
    return (
        f"RLAF/unguided mean decisions (CDCL, full injection, {config.train_seeds} seed(s)): "
        + ", ".join(f"{k} {v:.2f}" for k, v in ratios["rlaf"].items())
        + f" (bound {1 - config.margin:.2f}); shuffled control: "
        + ", ".join(f"{k} {v:.2f}" for k, v in ratios["shuffled"].items())
        + f" (must stay above the bound); RLAF vs degree heuristic (geometric-mean factor of fewer decisions, paired "
        f"over formulas): {degree}" + (f"; {groups}" if groups else "")
    )
