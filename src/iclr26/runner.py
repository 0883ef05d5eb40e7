"""Running one reproduction: config from scale/seed/overrides, a fresh run folder, the record written atomically."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from iclr26.catalog import load_experiment, paper
from iclr26.common.config import ExperimentConfig, apply_overrides
from iclr26.common.experiment import Outcome, RunContext
from iclr26.common.records import RESULT_FILE, environment, git_commit, new_run_dir, write_json_atomic
from iclr26.common.seeding import seed_everything


@dataclass(frozen=True)
class RunSummary:
    """Where a finished run wrote its record, and its verdict."""

    run_dir: Path
    outcome: Outcome
    wall_time_s: float


def build_config(module: str, scale: str, seed: int | None, overrides: list[str]) -> ExperimentConfig:
    """The config a run of ``module`` would use: the scale preset, then ``--set`` overrides, then ``--seed``.

    Raises:
        ConfigError: for an unknown scale or key, or a value of the wrong type or range.
    """
    experiment = load_experiment(module)
    config = apply_overrides(experiment.config_cls.preset(scale), overrides)
    if seed is not None:
        config = replace(config, seed=seed)
    return config


def run_experiment(module: str, config: ExperimentConfig, *, scale: str, out: Path, quiet: bool = False) -> RunSummary:
    """Run ``module``'s reproduction with ``config`` and write ``out/module/<stamp>/result.json``.

    If the run raises, the folder keeps ``error.txt`` with the traceback and no ``result.json``; the exception
    propagates.
    """
    entry = paper(module)
    experiment = load_experiment(module)
    run_dir = new_run_dir(out, module)
    ctx = RunContext(out_dir=run_dir, seed=config.seed, quiet=quiet)
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    seed_everything(config.seed)
    try:
        outcome = experiment.run(config, ctx)
    except BaseException:
        (run_dir / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        raise
    wall = time.perf_counter() - t0
    missing = [name for name in ctx.plots if not (run_dir / name).is_file()]
    if missing:
        raise RuntimeError(f"{module}: plots registered but not written: {missing}")
    record = {
        "schema": 1,
        "module": module,
        "paper": entry.number,
        "title": entry.title,
        "scale": scale,
        "seed": config.seed,
        "config": config.to_dict(),
        **environment(),
        "git_commit": git_commit(),
        "started_utc": started.isoformat(timespec="seconds"),
        "wall_time_s": round(wall, 3),
        "claim": entry.claim,
        "claim_held": outcome.claim_held,
        "evidence": outcome.evidence,
        "measurement": outcome.measurement,
        "notes": outcome.notes,
        "metrics": outcome.metrics,
        "plots": list(ctx.plots),
    }
    write_json_atomic(run_dir / RESULT_FILE, record)
    return RunSummary(run_dir=run_dir, outcome=outcome, wall_time_s=wall)
