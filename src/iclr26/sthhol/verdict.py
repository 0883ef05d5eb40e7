"""The ST-HHOL verdict: online learning beats the offline warm-up model under drift, beyond what it gains without
drift, and level one (the context hypergraph) helps where the context matters.

The rule (fixed before the record judged by it; margins are config fields with sources), every part paired over
seeds, a part *passing* when its seed mean exceeds its margin and its one-sided ``confidence`` lower bound exceeds 0
(:func:`iclr26.common.stats.margin_test`):

- **gate** ``drift_leaves_room`` (synthetic main city only): the warm-up model's MAE in excess of the generator's
  expected counts grows from the streamed days before the first drift to the days after it (margin 0); otherwise
  the drift left nothing for online learning to recover;
- **gate** ``frozen_mlp_intact``: the PF-LLM's frozen feed-forward weights are bit-identical after streaming (the
  component is the one the paper describes);
- **drift**: r = relative MAE reduction of online over offline on the judged days (after the first drift; every
  streamed day when the main city has no known drift point, as on user data). Both r on the main city
  (margin ``drift_effect_margin``) and the *drift effect* r_main − r_control, paired seed by seed with the no-drift
  control city on the same days (margin ``drift_effect_margin``), must pass: the control city's gain measures what
  more data and more steps give without drift;
- **level one**: q = relative MAE increase (all streamed days, online) when level one is removed must pass on the
  main city (margin ``context_margin``) and must not pass on the control city, whose context has no effect (the
  control that must fail). Not testable on data without context factors (then not part of the rule).

Held when every gate passes and both parts hold; not held when the gates pass and a part fails; inconclusive when a
gate fails. The pretrained-vs-random PF-LLM comparison is reported beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.common.config import threshold
from iclr26.common.stats import MarginTest, margin_test
from iclr26.common.verdict import Gate, Verdict
from iclr26.sthhol.config import STHHOLConfig


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured, as per-seed MAEs (seed order).

    Attributes:
        drift_known: whether the main city has a known drift point (synthetic city); False on user data, whose
            judged days are then every streamed day.
        main_offline: warm-up model's MAE on the judged days of the main city.
        main_online: the online model's MAE on the same days.
        control_offline: warm-up model's MAE on the same days of the no-drift control city.
        control_online: the online model's MAE on those days.
        main_full: arm -> online MAE over every streamed day of the main city: ``sthhol``, ``randllm`` and, when the
            data have context factors, ``nolevel1``.
        control_full: arm -> the same on the control city: ``sthhol`` and ``nolevel1``.
        excess_pre: warm-up model's MAE minus the expected-count predictor's on the streamed days before the first
            drift (main city); None without a known generator.
        excess_post: the same after the first drift; None as ``excess_pre``.
        frozen_mlp_intact: whether every PF-LLM's frozen weights were bit-identical after streaming.
    """

    drift_known: bool
    main_offline: list[float]
    main_online: list[float]
    control_offline: list[float]
    control_online: list[float]
    main_full: dict[str, list[float]]
    control_full: dict[str, list[float]]
    excess_pre: list[float] | None
    excess_post: list[float] | None
    frozen_mlp_intact: bool


def relative_reduction(before: list[float], after: list[float]) -> list[float]:
    """Per seed ``(before − after) / before``."""
    return [(b - a) / b for b, a in zip(before, after, strict=True)]


def _fmt(x: MarginTest) -> str:
    ci = f" ± {x.ci95_halfwidth:.1%}" if x.ci95_halfwidth is not None else " (one seed, no interval)"
    return f"{x.mean:+.1%}{ci}"


def _gates(m: Measurements, config: STHHOLConfig) -> list[Gate]:
    gates = [Gate("frozen_mlp_intact", m.frozen_mlp_intact, {"frozen_mlp_bit_identical": m.frozen_mlp_intact})]
    if m.drift_known and m.excess_pre is not None and m.excess_post is not None:
        growth = [b - a for a, b in zip(m.excess_pre, m.excess_post, strict=True)]
        room = margin_test(growth, margin=0.0, confidence=config.confidence)
        gates.append(Gate("drift_leaves_room", room.passes, {"excess_mae_growth": room.record(),
                                                             "excess_pre": m.excess_pre,
                                                             "excess_post": m.excess_post}))  # fmt: skip
    return gates


def verdict(m: Measurements, config: STHHOLConfig) -> Verdict:
    """The claim check (module docstring).

    Args:
        m: the per-seed MAEs.
        config: ``drift_effect_margin``, ``context_margin``, ``confidence``.

    Returns:
        The :class:`~iclr26.common.verdict.Verdict`; its evidence holds every paired test and the thresholds with
        their sources.
    """
    conf = config.confidence
    r_main = relative_reduction(m.main_offline, m.main_online)
    r_control = relative_reduction(m.control_offline, m.control_online)

    def increase(full: dict[str, list[float]], arm: str) -> MarginTest:
        return margin_test([-r for r in relative_reduction(full["sthhol"], full[arm])], margin=config.context_margin,
                           confidence=conf)  # fmt: skip

    t = {
        "online_vs_offline_main": margin_test(r_main, margin=config.drift_effect_margin, confidence=conf),
        "online_vs_offline_control": margin_test(r_control, margin=config.drift_effect_margin, confidence=conf),
        "drift_effect": margin_test(
            [a - b for a, b in zip(r_main, r_control, strict=True)], margin=config.drift_effect_margin, confidence=conf
        ),  # fmt: skip
        "pretrained_vs_random": margin_test(
            [-r for r in relative_reduction(m.main_full["sthhol"], m.main_full["randllm"])],
            margin=0.0,
            confidence=conf,
        ),  # fmt: skip
        "level_one_control": increase(m.control_full, "nolevel1"),
    }
    level_one_testable = "nolevel1" in m.main_full
    if level_one_testable:
        t["level_one_main"] = increase(m.main_full, "nolevel1")
    drift_ok = t["online_vs_offline_main"].passes and t["drift_effect"].passes
    level_ok = not level_one_testable or (t["level_one_main"].passes and not t["level_one_control"].passes)
    days = "post-drift" if m.drift_known else "all streamed days (no known drift point)"
    lvl = (f"; removing level one {_fmt(t['level_one_main'])} MAE (control {_fmt(t['level_one_control'])})"
           if level_one_testable else "; level one not testable (data without context)")  # fmt: skip
    measurement = (
        f"{len(r_main)} seed(s), {days}: online vs offline MAE reduction {_fmt(t['online_vs_offline_main'])} "
        f"(no-drift control {_fmt(t['online_vs_offline_control'])}; drift effect main - control "
        f"{_fmt(t['drift_effect'])}, margin {config.drift_effect_margin:.0%}){lvl}; random vs pretrained PF-LLM "
        f"{_fmt(t['pretrained_vs_random'])} MAE"
    )
    evidence = {
        **{name: x.record() for name, x in t.items()},
        "judged_days": days,
        "n_seeds": len(r_main),
        "level_one_testable": level_one_testable,
        "thresholds": {n: threshold(config, n) for n in ("drift_effect_margin", "context_margin", "confidence")},
    }
    notes = (
        "Relative differences are paired over seeds; ± is the 95% two-sided interval half-width. A part passes when "
        f"the mean exceeds its margin and the one-sided {conf:.0%} lower bound exceeds 0."
    )
    return Verdict.decide(_gates(m, config), held=drift_ok and level_ok, evidence=evidence, measurement=measurement,
                          notes=notes)  # fmt: skip
