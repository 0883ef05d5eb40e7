"""The DExploration verdict: step-wise verified exploration yields more valid, non-trivial statements per token.

The rule (fixed before the runs; thresholds are config fields with sources), over per-seed counts:

- **yield**: per seed, distinct valid statements per 1,000 sampled tokens, DExplorer − Conjecture-then-Prove (CtP
  resamples until well-formed and spends DExplorer's tokens, so the comparison is at equal tokens), has a seed mean
  above ``yield_margin`` and a one-sided ``confidence`` lower bound above 0 (paired t over seeds);
- **non-trivial yield**: the same for distinct valid statements that linear arithmetic (``lia``'s fragment) cannot
  prove bare, i.e. that need a non-linear step (the paper's complexity and difficulty: statements provers fail on);
- **provability**: ``coqc`` accepts at least ``coq_accept_min`` of DExplorer's outputs (at least one output);
- **control** (must fail): the unchecked agent (DExplorer with the kernel switched off) has an output ``coqc``
  rejects, so the provability part can fail.

Gates (a failed one gives ``inconclusive``):

- ``trivial_script_fails``: the scripted 25-token episode ``INTRO x; HYP x<=1; INTRO y; HYP y<=1; DEDUCE x+y<=2;
  SUBMIT``, repeated to DExplorer's tokens, does not pass both yield comparisons: the metric tells a trivial
  solution;
- ``baseline_writes_statements``: CtP wrote at least ``ctp_min_wellformed`` well-formed conjectures on every seed,
  so its yield is measured on statements, not on syntax errors.

Tokens per valid statement are reported only on seeds where both arms have valid outputs (none otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.common.config import threshold
from iclr26.common.stats import MarginTest, margin_test
from iclr26.common.verdict import Gate, Verdict
from iclr26.dexploration.config import DExplorationConfig

#: The arms the verdict reads.
JUDGED_ARMS = ("dexplorer", "ctp", "unchecked", "trivial_script")


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured, per arm and seed (seed order), as plain counts.

    Attributes:
        tokens: arm -> tokens sampled per seed (the trivial script: its tokens, 25 per episode).
        valid: arm -> distinct valid statements per seed.
        nonlinear: arm -> distinct valid statements per seed that linear arithmetic cannot prove bare.
        coq_checked: arm -> outputs whose certificate ``coqc`` compiled, per seed.
        coq_accepted: arm -> of them, accepted, per seed.
        ctp_wellformed: well-formed conjectures of Conjecture-then-Prove per seed.
    """

    tokens: dict[str, list[int]]
    valid: dict[str, list[int]]
    nonlinear: dict[str, list[int]]
    coq_checked: dict[str, list[int]]
    coq_accepted: dict[str, list[int]]
    ctp_wellformed: list[int]

    def per_kilotoken(self, counts: dict[str, list[int]], arm: str) -> list[float]:
        """``counts[arm]`` per 1,000 sampled tokens, per seed (0 on a seed without tokens)."""
        return [1000 * c / t if t else 0.0 for c, t in zip(counts[arm], self.tokens[arm], strict=True)]

    def tokens_per_valid(self) -> dict[str, object]:
        """Tokens per distinct valid statement of DExplorer and CtP, on the seeds where both have one."""
        seeds = [s for s, (a, b) in enumerate(zip(self.valid["dexplorer"], self.valid["ctp"], strict=True)) if a and b]
        return {
            "seeds": seeds,
            **{arm: [self.tokens[arm][s] / self.valid[arm][s] for s in seeds] for arm in ("dexplorer", "ctp")},
        }


def gain(m: Measurements, counts: dict[str, list[int]], arm: str, config: DExplorationConfig) -> MarginTest:
    """The margin test of ``arm`` − CtP on ``counts`` per 1,000 tokens, paired over seeds."""
    diffs = [a - b for a, b in zip(m.per_kilotoken(counts, arm), m.per_kilotoken(counts, "ctp"), strict=True)]
    return margin_test(diffs, margin=config.yield_margin, confidence=config.confidence)


def verdict(m: Measurements, config: DExplorationConfig) -> Verdict:
    """The claim check (module docstring).

    Args:
        m: the per-seed counts of every arm in :data:`JUDGED_ARMS`.
        config: ``yield_margin``, ``confidence``, ``coq_accept_min`` and ``ctp_min_wellformed``.

    Returns:
        The :class:`~iclr26.common.verdict.Verdict`, with the tests, the control and the thresholds in its evidence.
    """
    valid, nonlinear = gain(m, m.valid, "dexplorer", config), gain(m, m.nonlinear, "dexplorer", config)
    trivial = (gain(m, m.valid, "trivial_script", config), gain(m, m.nonlinear, "trivial_script", config))
    checked, accepted = sum(m.coq_checked["dexplorer"]), sum(m.coq_accepted["dexplorer"])
    share = accepted / checked if checked else 0.0
    coq_ok = checked > 0 and share >= config.coq_accept_min
    ctl_checked, ctl_accepted = sum(m.coq_checked["unchecked"]), sum(m.coq_accepted["unchecked"])
    control_fails = ctl_checked > ctl_accepted
    gates = [
        Gate("trivial_script_fails", not (trivial[0].passes and trivial[1].passes),
             {"valid_gain": trivial[0].record(), "nonlinear_gain": trivial[1].record()}),
        Gate("baseline_writes_statements", min(m.ctp_wellformed, default=0) >= config.ctp_min_wellformed,
             {"ctp_wellformed_per_seed": list(m.ctp_wellformed), "min": config.ctp_min_wellformed}),
    ]  # fmt: skip
    evidence = {
        "valid_per_ktoken_gain": valid.record(),
        "nonlinear_per_ktoken_gain": nonlinear.record(),
        "valid_per_ktoken": {a: m.per_kilotoken(m.valid, a) for a in JUDGED_ARMS},
        "nonlinear_per_ktoken": {a: m.per_kilotoken(m.nonlinear, a) for a in JUDGED_ARMS},
        "tokens_per_valid_where_both_valid": m.tokens_per_valid(),
        "dexplorer_coq_accepted": accepted, "dexplorer_coq_checked": checked, "dexplorer_coq_share": share,
        "coq_all_accepted": coq_ok,
        "control_unchecked_coq_accepted": ctl_accepted, "control_unchecked_coq_checked": ctl_checked,
        "control_fails": control_fails, "n_seeds": len(m.ctp_wellformed),
        "thresholds": {n: threshold(config, n) for n in ("yield_margin", "confidence", "coq_accept_min",
                                                          "ctp_min_wellformed")},
    }  # fmt: skip
    held = valid.passes and nonlinear.passes and coq_ok and control_fails
    return Verdict.decide(gates, held=held, evidence=evidence, measurement=_measurement(m, valid, nonlinear))


def _fmt(t: MarginTest) -> str:
    bound = "" if t.lower_bound is None else f", lower bound {t.lower_bound:+.3f}"
    return f"{t.mean:+.3f}{bound}"


def _measurement(m: Measurements, valid: MarginTest, nonlinear: MarginTest) -> str:
    def total(counts: dict[str, list[int]], arm: str) -> str:
        return f"{sum(counts[arm])}/{sum(m.tokens[arm])}"

    cost = m.tokens_per_valid()
    cost_text = (
        f"tokens/valid {sum(cost['dexplorer']) / len(cost['seeds']):.0f} vs {sum(cost['ctp']) / len(cost['seeds']):.0f}"
        f" on the {len(cost['seeds'])} seed(s) where both have valid outputs"
        if cost["seeds"]
        else "tokens/valid not reported: no seed where both arms have valid outputs"
    )  # fmt: skip
    return (
        f"{len(m.ctp_wellformed)} seed(s), equal tokens: distinct valid/tokens DExplorer {total(m.valid, 'dexplorer')}"
        f" vs CtP {total(m.valid, 'ctp')} (gain per 1k tokens {_fmt(valid)}); non-linear "
        f"{total(m.nonlinear, 'dexplorer')} vs {total(m.nonlinear, 'ctp')} ({_fmt(nonlinear)}); {cost_text}; coqc "
        f"accepts {sum(m.coq_accepted['dexplorer'])}/{sum(m.coq_checked['dexplorer'])} DExplorer outputs, "
        f"{sum(m.coq_accepted['unchecked'])}/{sum(m.coq_checked['unchecked'])} of the unchecked control's"
    )
