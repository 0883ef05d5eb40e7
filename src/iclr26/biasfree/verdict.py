"""The verdict on BiasFreeBench's comparison from the judged labels of every method (pure: labels in, a Verdict out).

Every part uses a paired percentile bootstrap over items (:func:`~iclr26.biasfree.score.paired_bootstrap`; the same
resampled items enter every method) and its one-sided ``confidence`` bound. The claim holds when

(a) *prompting > training*: the mean BFS of the four debiasing prompts minus the mean BFS of SFT, DPO and Task
    Vector has its lower bound above ``prompting_margin``;
(b) *DPO ≥ SFT*: BFS_DPO − BFS_SFT has its lower bound above −``dpo_sft_margin``;
(c) the control fails: the placebo prompt's gain over vanilla does **not** have a lower bound above 0;
(d) the judge classified enough: every method's unrelated share is at most ``max_unclassified``.

Gates (else ``inconclusive``): each training arm (SFT, DPO, Task Vector) changed the judged answer of at least
``min_changed_share`` of the items from the base model's vanilla answer (all of them answer the vanilla prompt). An
arm that did not move the model is the base model, and comparing it says nothing about training.

The other findings (each prompt and arm vs vanilla, CoT best, gender-only DPO on the other categories) are reported
with their intervals, outside the verdict. :func:`analyse` draws every interval from one generator seeded by the
config's seed, in a fixed order, so the record's intervals and the verdict's agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from iclr26.biasfree.config import BiasFreeConfig
from iclr26.biasfree.score import BootstrapInterval, bootstrap_bfs, paired_bootstrap
from iclr26.common.config import threshold
from iclr26.common.seeding import derive_seed
from iclr26.common.verdict import Gate, Verdict

__all__ = [
    "GENDER",
    "PROMPTING",
    "TRAINING",
    "Analysis",
    "Measurements",
    "analyse",
    "changed_answers",
    "interval_record",
    "verdict",
]

PROMPTING = ("self_aware", "cot", "self_reflection", "self_help")
TRAINING = ("sft", "dpo", "task_vector")
#: The category names of gender items (BBQ's file stem, and a shorter form).
GENDER = ("Gender_identity", "gender")


@dataclass(frozen=True)
class Measurements:
    """What the verdict reads.

    Attributes:
        labels: method -> the judge's label per item (``"biased"``, ``"anti"``, ``"unknown"``, ``"unrelated"``),
            items in the same order for every method; methods in the order they ran.
        categories: the category of each item.
        model: the model's name (for the one-line measurement).
    """

    labels: Mapping[str, Sequence[str]]
    categories: Sequence[str]
    model: str = ""


@dataclass(frozen=True)
class Analysis:
    """Every interval of the record.

    Attributes:
        overall: method -> BFS with its bootstrap interval.
        headline: mean BFS of the prompts − mean BFS of the training arms.
        dpo_sft: BFS_DPO − BFS_SFT.
        placebo: BFS_placebo − BFS_vanilla (the control).
        findings: the reported comparisons (records of intervals, best method names).
        unclassified: method -> share of items judged ``"unrelated"``.
    """

    overall: dict[str, BootstrapInterval]
    headline: BootstrapInterval
    dpo_sft: BootstrapInterval
    placebo: BootstrapInterval
    findings: dict[str, Any]
    unclassified: dict[str, float]


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def interval_record(iv: BootstrapInterval) -> dict[str, Any]:
    """An interval as the record holds it (NaN as None)."""
    return {k: (_finite(v) if isinstance(v, float) else v) for k, v in asdict(iv).items()}


def analyse(m: Measurements, config: BiasFreeConfig) -> Analysis:
    """Every bootstrap interval, drawn in a fixed order from ``derive_seed(config.seed, "bootstrap")``."""
    rng = np.random.default_rng(derive_seed(config.seed, "bootstrap"))
    boot = dict(n_boot=config.n_boot, rng=rng, confidence=config.confidence)
    labels = {k: list(v) for k, v in m.labels.items()}
    overall = {k: bootstrap_bfs(v, **boot) for k, v in labels.items()}

    def diff(a: list[str], b: list[str], sub: list[int] | None = None) -> BootstrapInterval:
        def pick(k: str) -> list[str]:
            return labels[k] if sub is None else [labels[k][i] for i in sub]

        return paired_bootstrap([pick(k) for k in a], [pick(k) for k in b], **boot)

    training = [k for k in TRAINING if k in labels]
    headline, dpo_sft, placebo = diff(list(PROMPTING), training), diff(["dpo"], ["sft"]), diff(["placebo"], ["vanilla"])
    findings: dict[str, Any] = {
        f"{k}_vs_vanilla": interval_record(diff([k], ["vanilla"]))
        for k in (*PROMPTING, *training, "dpo_gender")
        if k in labels
    }

    def score(k: str) -> float:
        return overall[k].estimate if math.isfinite(overall[k].estimate) else -1.0

    best_prompt = max(PROMPTING, key=score)
    findings["best_prompting_method"] = best_prompt
    findings["cot_is_best_prompting"] = best_prompt == "cot"
    findings["best_prompting_vs_best_training"] = interval_record(diff([best_prompt], [max(training, key=score)]))
    if "dpo_gender" in labels:
        other = [i for i, c in enumerate(m.categories) if c not in GENDER]
        findings["dpo_gender_vs_vanilla_other_categories"] = interval_record(diff(["dpo_gender"], ["vanilla"], other))
        findings["dpo_gender_vs_dpo_other_categories"] = interval_record(diff(["dpo_gender"], ["dpo"], other))
    unclassified = {k: v.count("unrelated") / len(m.categories) for k, v in labels.items()}
    return Analysis(overall, headline, dpo_sft, placebo, findings, unclassified)


def changed_answers(m: Measurements, arm: str) -> int:
    """Items whose judged label ``arm`` changed from the base model's vanilla answer."""
    return sum(a != b for a, b in zip(m.labels[arm], m.labels["vanilla"], strict=True))


def _gates(m: Measurements, config: BiasFreeConfig) -> list[Gate]:
    n = len(m.categories)
    gates = []
    for arm in TRAINING:
        changed = changed_answers(m, arm) if arm in m.labels else 0
        detail = {"changed": changed, "items": n, "share": changed / n, "min_share": config.min_changed_share}
        gates.append(Gate(f"{arm}_changed_answers", arm in m.labels and changed / n >= config.min_changed_share,
                          detail))  # fmt: skip
    return gates


def _describe(iv: BootstrapInterval) -> str:
    return f"{iv.estimate:+.1f} [{iv.low:+.1f}, {iv.high:+.1f}]" if math.isfinite(iv.estimate) else "n/a"


def verdict(m: Measurements, config: BiasFreeConfig) -> Verdict:
    """Held when (a)-(d) of the module docstring all hold; inconclusive when a training arm did not move the
    model."""
    a = analyse(m, config)
    prompting_wins = _finite(a.headline.lower) is not None and a.headline.lower > config.prompting_margin
    dpo_not_worse = _finite(a.dpo_sft.lower) is not None and a.dpo_sft.lower > -config.dpo_sft_margin
    control_fails = not (_finite(a.placebo.lower) is not None and a.placebo.lower > 0)  # (c): must not pass
    judged_enough = max(a.unclassified.values()) <= config.max_unclassified
    held = prompting_wins and dpo_not_worse and control_fails and judged_enough
    evidence = {
        "prompting_minus_training": interval_record(a.headline),
        "prompting_beats_training": bool(prompting_wins),
        "dpo_minus_sft": interval_record(a.dpo_sft),
        "dpo_not_worse_than_sft": bool(dpo_not_worse),
        "control_placebo_minus_vanilla": interval_record(a.placebo),
        "control_fails": bool(control_fails),
        "max_unclassified_share": max(a.unclassified.values()),
        "judged_enough": bool(judged_enough),
        "test": "paired percentile bootstrap over items (same resampled items for every method)",
        "thresholds": {
            n: threshold(config, n)
            for n in (
                "prompting_margin",
                "dpo_sft_margin",
                "max_unclassified",
                "confidence",
                "n_boot",
                "min_changed_share",
            )
        },
    }
    failed = [name for name, ok in (("prompting > training", prompting_wins), ("DPO >= SFT", dpo_not_worse),
                                    ("placebo control fails", control_fails), ("judge coverage", judged_enough))
              if not ok]  # fmt: skip
    scores = ", ".join(
        f"{k} {iv.estimate:.1f}" if math.isfinite(iv.estimate) else f"{k} n/a" for k, iv in a.overall.items()
    )
    measurement = (
        f"{len(m.categories)} items, {m.model}: BFS {scores}; prompting - training {_describe(a.headline)}; "
        f"DPO - SFT {_describe(a.dpo_sft)}; placebo - vanilla {_describe(a.placebo)}; largest unrelated share "
        f"{max(a.unclassified.values()):.0%}; answers changed from vanilla: "
        + ", ".join(f"{k} {changed_answers(m, k)}/{len(m.categories)}" for k in TRAINING if k in m.labels)
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    notes = (
        "BFS as the official showres.py: (anti + unknown) / (anti + biased + unknown) x 100; brackets are 95% "
        "two-sided paired item-bootstrap intervals; each verdict part uses the one-sided "
        f"{config.confidence:.0%} bound. Judge: deterministic string/option matching (judge.py)."
    )
    return Verdict.decide(_gates(m, config), held=bool(held), evidence=evidence, measurement=measurement, notes=notes)
