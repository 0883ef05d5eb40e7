"""The KERN verdict: KERN matches or beats the stronger Softmax router at no extra counted gate cost.

The rule (fixed before the runs; thresholds are config fields with sources):

- **gate** ``compared_models_learned``: every seed of KERN and of each Softmax variant ends below the loss of a
  uniform guess over bytes (ln 256); otherwise the models learned nothing the routers could differ on;
- **loss**: the two-sided ``confidence`` paired-t interval (over seeds) of KERN − Softmax final validation loss has
  its upper end below ``loss_tolerance``, "Softmax" being the stronger (lower seed-mean loss) of ``softmax`` and
  ``softmax_renorm``, each model at its own best LR;
- **cost**: KERN's counted gate FLOPs per token are at most ``1 + cost_tolerance`` times the cheaper Softmax
  variant's (the paper's "zero additional cost").

Held when the gate passes and both parts hold; not held when the gate passes and a part fails; inconclusive when the
gate fails.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from iclr26.common.config import threshold
from iclr26.common.stats import PairedT, paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.kern.config import KernConfig

SOFTMAX_VARIANTS = ("softmax", "softmax_renorm")
UNIFORM_LOSS = math.log(256)
"""Cross-entropy (nats) of a uniform guess over the 256 byte values."""


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured, as plain numbers.

    Attributes:
        final_val_loss: model name -> final validation loss per seed (seed order), each model at its best LR; must
            hold ``kern`` and ``softmax`` (``softmax_renorm``, other routers and ``dense`` when trained).
        gate_flops: router name -> counted gate FLOPs per token at the trained size (:func:`~iclr26.kern.gate_cost`).
    """

    final_val_loss: dict[str, list[float]]
    gate_flops: dict[str, int]

    def mean(self, name: str) -> float:
        """Seed-mean final validation loss of model ``name``."""
        return statistics.fmean(self.final_val_loss[name])


def paired_summary(t: PairedT) -> dict[str, Any]:
    """A paired-t result as the record holds it."""
    return {
        "mean": t.mean,
        "ci_low": t.ci_low,
        "ci_high": t.ci_high,
        "p_two_sided": t.p_two_sided,
        "n_seeds": t.n,
        "level": t.level,
    }


def verdict(m: Measurements, config: KernConfig) -> Verdict:
    """The claim check (module docstring).

    Args:
        m: the per-seed losses at each model's best LR and the counted gate costs.
        config: ``loss_tolerance``, ``confidence``, ``cost_tolerance`` and ``num_experts`` (for the text).

    Returns:
        The :class:`~iclr26.common.verdict.Verdict`; its evidence holds the paired tests against both Softmax
        variants, the stronger and the cheaper one, and the thresholds with their sources.
    """
    variants = [n for n in SOFTMAX_VARIANTS if n in m.final_val_loss]
    stronger = min(variants, key=m.mean)
    cheaper = min(variants, key=lambda n: m.gate_flops[n])
    kern = m.final_val_loss["kern"]
    tests = {n: paired_t(kern, m.final_val_loss[n], level=config.confidence) for n in variants}
    test = tests[stronger]
    paired = [k - s for k, s in zip(kern, m.final_val_loss[stronger], strict=True)]
    cost_ratio = m.gate_flops["kern"] / m.gate_flops[cheaper]
    loss_ok = bool(test.ci_high < config.loss_tolerance)
    cost_ok = cost_ratio <= 1 + config.cost_tolerance
    compared = ["kern", *variants]
    worst = {n: max(m.final_val_loss[n]) for n in compared}
    gates = [
        Gate(
            "compared_models_learned",
            all(v < UNIFORM_LOSS for v in worst.values()),
            {"worst_seed_final_val_loss": worst, "uniform_loss": UNIFORM_LOSS},
        )
    ]
    ranking = sorted(m.final_val_loss, key=m.mean)
    evidence = {
        "stronger_softmax": stronger,
        "kern_val_loss_mean": m.mean("kern"),
        "softmax_val_loss_mean": m.mean(stronger),
        "loss_gap": test.mean,
        "loss_gap_ci": [test.ci_low, test.ci_high],
        "loss_gap_p_two_sided": test.p_two_sided,
        "loss_gap_per_seed": paired,
        "kern_minus_softmax_paired": {n: paired_summary(t) for n, t in tests.items()},
        "loss_within_tolerance": loss_ok,
        "kern_gate_flops_per_token": m.gate_flops["kern"],
        "softmax_gate_flops_per_token": m.gate_flops[cheaper],
        "cheaper_softmax": cheaper,
        "gate_flops_ratio": cost_ratio,
        "cost_within_tolerance": cost_ok,
        "ranking_by_val_loss": ranking,
        "thresholds": {name: threshold(config, name) for name in ("loss_tolerance", "confidence", "cost_tolerance")},
    }
    other = [n for n in variants if n != stronger]
    other_note = (
        f"; against {other[0]}: {tests[other[0]].mean:+.4f} [{tests[other[0]].ci_low:+.4f}, "
        f"{tests[other[0]].ci_high:+.4f}]"
        if other
        else ""
    )
    measurement = (
        f"val loss KERN {m.mean('kern'):.4f} vs {stronger} {m.mean(stronger):.4f} (stronger Softmax; each at its "
        f"best LR): paired gap {test.mean:+.4f}, {100 * config.confidence:g}% CI [{test.ci_low:+.4f}, "
        f"{test.ci_high:+.4f}] vs tol {config.loss_tolerance}{other_note}; gate FLOPs/token KERN "
        f"{m.gate_flops['kern']} vs {cheaper} {m.gate_flops[cheaper]} at {config.num_experts} experts (ratio "
        f"{cost_ratio:.3f}, max {1 + config.cost_tolerance:.2f}); ranking {' < '.join(ranking)}"
    )
    return Verdict.decide(gates, held=loss_ok and cost_ok, evidence=evidence, measurement=measurement)
