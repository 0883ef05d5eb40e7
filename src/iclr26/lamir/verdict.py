"""The LAMIR verdict: look-ahead in the learned model recovers the game (claim 1) and improves the agent (claim 2).

Per replicate ``j`` (all exact, seeded quantities; OpenSpiel's exploitability is NashConv / 2): ``b_j`` the selected
base policy's exploitability, ``t_j`` the true-model depth-1 search's, ``e_j`` the exact-capacity model's search's,
``l_j`` the limited-capacity model's search's and ``s_j`` its exact expected score (win + draw/2) against the base
policy; ``u_j`` and ``s^u_j`` the same for the search on an untrained model of the limited capacity. Intervals are
two-sided Student-t at ``interval_level`` over the replicates.

Gates (the test bed can show the effect; a failed one makes the verdict ``inconclusive``):

- ``search_machinery_exact``: full-depth continual resolving with the true model is within
  ``max_solver_exploitability`` of a Nash equilibrium in every replicate (the resolver, its gadget and CFR+ are
  right, so what a learned model loses is the model's);
- ``lookahead_improves_base``: the interval of ``b_j − t_j`` lies above 0 (depth-1 look-ahead with the true model
  and the base agent's transformations improves this base agent: the effect a learned model can at best deliver);
- ``models_learned``: in every replicate both learned models predict rewards closer (lower MAE) and legal actions
  more often right than the untrained model;
- ``capacities_as_designed``: ``exact_capacity`` reaches the one-to-one size and ``limited_capacity`` lies below it.

Comparisons:

- **Claim 1**: the exact-capacity model's abstraction is one-to-one and its dynamics exact in every replicate, and
  the interval of ``b_j − e_j`` lies above 0: the gap ``e_j − t_j`` to the true-model depth-1 search is within the
  base policy's own gap ``b_j − t_j`` (the notes' claim (a): "LAMIR's search policy is less exploitable than the base
  PG policy").
- **Claim 2**: the intervals of ``b_j − l_j`` and of ``s_j − min_score_vs_base`` lie above 0.
- **Control that must fail**: the claim-2 rule applied to the untrained model (``u_j``, ``s^u_j``) must not pass;
  if it passes, the rule cannot tell a learned model from none.

Held when every gate passes, both claims hold and the control fails; not held when every gate passes and a claim
holds not or the control passes; inconclusive when a gate fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.lamir.config import LamirConfig

MODELS = ("exact", "limited", "untrained")
"""The models whose accuracy the ``models_learned`` gate compares."""


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured, one entry per replicate (replicate order).

    Attributes:
        seeds: the replicates' indices.
        one_to_one_size: the most infosets of one player in one public state (the capacity a one-to-one
            abstraction needs).
        base: ``b_j``, exploitability of the selected base-policy checkpoint.
        last_iterate: exploitability of the base policy's last iterate (reported beside ``b_j``).
        true_depth1: ``t_j``, exploitability of continual resolving with the true model at depth 1 (exact values of
            the base agent's transformations at the leaves).
        true_full: exploitability of continual resolving with the true model at full depth.
        exact_search: ``e_j``, exploitability of LAMIR's search on the exact-capacity model.
        exact_abstraction: whether that model's abstraction is one-to-one in every public state.
        exact_dynamics: whether that model's dynamics are exact (terminal flags, public states, rounded rewards,
            legal actions on every history).
        limited_search: ``l_j``, exploitability of LAMIR's search on the limited-capacity model.
        limited_score: ``s_j``, that search's exact expected score against the base policy.
        limited_match_score: its sampled score in head-to-head games (reported, not judged).
        limited_match_ci95: half-width of the sampled score's 95% interval.
        untrained_search: ``u_j``, exploitability of the same search on an untrained limited-capacity model.
        untrained_score: ``s^u_j``, that search's exact expected score against the base policy.
        reward_mae: ``"exact"``, ``"limited"``, ``"untrained"`` -> each model's mean absolute reward error per
            replicate (over every terminal transition).
        legal_accuracy: the same keys -> each model's share of infosets whose legal-action set it predicts right.
    """

    seeds: list[int]
    one_to_one_size: int
    base: list[float]
    last_iterate: list[float]
    true_depth1: list[float]
    true_full: list[float]
    exact_search: list[float]
    exact_abstraction: list[bool]
    exact_dynamics: list[bool]
    limited_search: list[float]
    limited_score: list[float]
    limited_match_score: list[float]
    limited_match_ci95: list[float]
    untrained_search: list[float]
    untrained_score: list[float]
    reward_mae: dict[str, list[float]]
    legal_accuracy: dict[str, list[float]]

    def __post_init__(self) -> None:
        n = len(self.seeds)
        if n < 2:
            raise ValueError(f"Measurements.seeds: an interval over replicates needs at least 2, got {n}")
        for name, values in vars(self).items():
            if isinstance(values, list) and len(values) != n:
                raise ValueError(f"Measurements.{name}: one entry per replicate ({n}), got {len(values)}")
        for name in ("reward_mae", "legal_accuracy"):
            table = getattr(self, name)
            if set(table) != set(MODELS) or any(len(v) != n for v in table.values()):
                raise ValueError(f"Measurements.{name}: keys {MODELS}, one entry per replicate ({n}) each")


def interval(values: list[float], level: float) -> dict[str, float]:
    """Mean of ``values`` over replicates with its two-sided Student-t interval at ``level``."""
    t = paired_t(np.asarray(values, dtype=np.float64), level=level)
    return {"mean": float(t.mean), "ci_low": float(t.ci_low), "ci_high": float(t.ci_high)}


def claim1_evidence(m: Measurements, config: LamirConfig) -> dict:
    """Claim 1 (module docstring) with its per-replicate numbers; ``held`` says whether it holds."""
    structure = [bool(a and d) for a, d in zip(m.exact_abstraction, m.exact_dynamics, strict=True)]
    c1 = interval([b - e for b, e in zip(m.base, m.exact_search, strict=True)], config.interval_level)
    rows = zip(
        m.seeds, m.exact_abstraction, m.exact_dynamics, m.exact_search, m.base, m.true_depth1, structure, strict=True
    )
    return {
        **c1,
        "held": bool(all(structure) and c1["ci_low"] > 0),
        "structure_exact_seeds": int(sum(structure)),
        "per_seed": [
            {
                "seed": seed,
                "exact_abstraction": abstraction,
                "dynamics_exact": dynamics,
                "search_exploitability": e,
                "base_exploitability": b,
                "true_model_depth1_exploitability": t,
                "gap_to_true_model": e - t,
                "tolerance_base_gap_to_true_model": b - t,
                "held": bool(ok and e <= b),
            }
            for seed, abstraction, dynamics, e, b, t, ok in rows
        ],
    }


def claim2_evidence(m: Measurements, config: LamirConfig) -> dict:
    """Claim 2 (module docstring) with its per-replicate numbers; ``held`` says whether it holds."""
    bar = config.min_score_vs_base
    c2 = interval([b - s for b, s in zip(m.base, m.limited_search, strict=True)], config.interval_level)
    sc = interval([x - bar for x in m.limited_score], config.interval_level)
    rows = zip(
        m.seeds,
        m.limited_search,
        m.base,
        m.last_iterate,
        m.limited_score,
        m.limited_match_score,
        m.limited_match_ci95,
        strict=True,
    )
    return {
        **c2,
        "score_mean": sc["mean"] + bar,
        "score_ci_low": sc["ci_low"] + bar,
        "score_ci_high": sc["ci_high"] + bar,
        "held": bool(c2["ci_low"] > 0 and sc["ci_low"] > 0),
        "per_seed": [
            {
                "seed": seed,
                "search_exploitability": lim,
                "base_exploitability": b,
                "last_iterate_exploitability": last,
                "exact_score_vs_base": score,
                "match_score": match,
                "match_ci95": ci95,
                "held": bool(lim < b and score > bar),
            }
            for seed, lim, b, last, score, match, ci95 in rows
        ],
    }


def control_evidence(m: Measurements, config: LamirConfig) -> dict:
    """The claim-2 rule applied to the untrained model; ``passes`` must come out False."""
    bar = config.min_score_vs_base
    gap = interval([b - u for b, u in zip(m.base, m.untrained_search, strict=True)], config.interval_level)
    sc = interval([x - bar for x in m.untrained_score], config.interval_level)
    return {
        **gap,
        "score_mean": sc["mean"] + bar,
        "score_ci_low": sc["ci_low"] + bar,
        "score_ci_high": sc["ci_high"] + bar,
        "passes": bool(gap["ci_low"] > 0 and sc["ci_low"] > 0),
        "search_exploitability": list(m.untrained_search),
        "exact_score_vs_base": list(m.untrained_score),
    }


def gates(m: Measurements, config: LamirConfig) -> list[Gate]:
    """The test bed's gates (module docstring)."""
    lookahead = interval([b - t for b, t in zip(m.base, m.true_depth1, strict=True)], config.interval_level)
    untrained_mae, untrained_legal = m.reward_mae["untrained"], m.legal_accuracy["untrained"]
    learned = all(
        mae < u_mae and legal > u_legal
        for name in ("exact", "limited")
        for mae, u_mae, legal, u_legal in zip(
            m.reward_mae[name], untrained_mae, m.legal_accuracy[name], untrained_legal, strict=True
        )
    )
    return [
        Gate(
            "search_machinery_exact",
            max(m.true_full) <= config.max_solver_exploitability,
            {"true_model_full_exploitability": list(m.true_full), "threshold": config.max_solver_exploitability},
        ),
        Gate("lookahead_improves_base", lookahead["ci_low"] > 0, {"base_minus_true_model_depth1": lookahead}),
        Gate(
            "models_learned",
            learned,
            {"reward_mae": dict(m.reward_mae), "legal_accuracy": dict(m.legal_accuracy)},
        ),
        Gate(
            "capacities_as_designed",
            config.exact_capacity >= m.one_to_one_size > config.limited_capacity,
            {
                "exact_capacity": config.exact_capacity,
                "limited_capacity": config.limited_capacity,
                "one_to_one_size": m.one_to_one_size,
            },
        ),
    ]


def verdict(m: Measurements, config: LamirConfig) -> Verdict:
    """The claim check (module docstring).

    Args:
        m: the per-replicate exploitabilities, scores, structure checks and model accuracies.
        config: ``exact_capacity``, ``limited_capacity``, ``interval_level``, ``min_score_vs_base``,
            ``max_solver_exploitability``, ``num_cards``.

    Returns:
        The :class:`~iclr26.common.verdict.Verdict`; its evidence holds both claims with their per-replicate numbers,
        the control, and the thresholds with their sources.
    """
    c1, c2, control = claim1_evidence(m, config), claim2_evidence(m, config), control_evidence(m, config)
    names = ("interval_level", "min_score_vs_base", "max_solver_exploitability")
    evidence = {
        "seeds": list(m.seeds),
        "exact_capacity": config.exact_capacity,
        "limited_capacity": config.limited_capacity,
        "one_to_one_size": m.one_to_one_size,
        "base_rule": "median-exploitability checkpoint of the second half of training (lower median)",
        "claim1": c1,
        "claim2": c2,
        "untrained_control": control,
        "thresholds": {name: threshold(config, name) for name in names},
    }
    n = len(m.seeds)
    measurement = (
        f"II-Goofspiel {config.num_cards}, {n} seeds, base = median second-half checkpoint: "
        f"claim 1 (L={config.exact_capacity}) structure exact in {c1['structure_exact_seeds']}/{n} seeds, "
        f"base - search expl {c1['mean']:+.3f} [{c1['ci_low']:+.3f}, {c1['ci_high']:+.3f}]; "
        f"claim 2 (L={config.limited_capacity}) base - search expl {c2['mean']:+.3f} "
        f"[{c2['ci_low']:+.3f}, {c2['ci_high']:+.3f}], exact score vs base {c2['score_mean']:.3f} "
        f"[{c2['score_ci_low']:.3f}, {c2['score_ci_high']:.3f}]; untrained control base - search expl "
        f"{control['mean']:+.3f} [{control['ci_low']:+.3f}, {control['ci_high']:+.3f}] "
        f"({'passes: the rule cannot tell' if control['passes'] else 'fails, as it must'})"
    )
    held = c1["held"] and c2["held"] and not control["passes"]
    return Verdict.decide(gates(m, config), held=held, evidence=evidence, measurement=measurement)
