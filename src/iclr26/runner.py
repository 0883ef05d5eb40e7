"""Running one reproduction: config from scale/seed/overrides, checks before any work, a run folder, the record
written atomically, then the plots; resuming an interrupted run from its folder.

Order of a run (every check before the first unit of work; a rejected run leaves no folder):

1. the config (scale preset, ``--set``, ``--seed``), validated by its ``__post_init__`` (user data is opened and
   parsed there);
2. the device the config names (a ``cpu`` machine asked for ``cuda`` fails here);
3. the output folder: created, checked writable for the longest name the run will write;
4. ``run.json`` (module, scale, config), then the reproduction, whose units of work land in ``units/``;
5. ``result.json``, then the plots; a plot that fails to save is noted in the record. The units of work are
   removed once the record is written (only an unfinished run needs them).

Under ``torchrun`` (more than one process, :mod:`iclr26.common.distributed`) a module must declare
``data_parallel=True`` (:func:`check_data_parallel`, before any work). Every rank runs the reproduction; rank 0
creates the folder and broadcasts its path, and only rank 0 writes ``run.json``, units, ``result.json``, plots and
the marker files. The record states ``world_size``, and ``cpu_time_s`` sums the CPU time of all ranks.
"""

from __future__ import annotations

import errno
import resource
import shutil
import time
import traceback
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from iclr26.catalog import implemented, load_experiment, paper
from iclr26.common.config import ConfigError, ExperimentConfig, apply_overrides
from iclr26.common.device import resolve_device
from iclr26.common.distributed import DistributedError, World, all_reduce_sum, current_world, on_main
from iclr26.common.experiment import MAX_NAME_LEN, UNITS_DIR, Outcome, RunContext
from iclr26.common.plots import savefig
from iclr26.common.records import (
    ERROR_FILE,
    INTERRUPTED_FILE,
    RESULT_FILE,
    RUN_FILE,
    SCHEMA_VERSION,
    environment,
    git_commit,
    new_run_dir,
    write_json_atomic,
)
from iclr26.common.seeding import seed_everything

if TYPE_CHECKING:
    import torch


class OutputError(ValueError):
    """The output folder cannot take the run's files; the message names ``--out`` and the fix."""


class ResumeError(ValueError):
    """A folder given to ``--resume`` cannot be resumed; the message says why."""


@dataclass(frozen=True)
class RunSummary:
    """Where a finished run wrote its record, and its verdict.

    Attributes:
        run_dir: the run folder.
        outcome: what the reproduction returned.
        wall_time_s: seconds of this process's part of the run (a resumed run counts only its own).
        resumed_units: units read back from the interrupted run (empty for a fresh run).
        plot_errors: plot name -> error, for plots that could not be saved.
    """

    run_dir: Path
    outcome: Outcome
    wall_time_s: float
    resumed_units: tuple[str, ...] = ()
    plot_errors: dict[str, str] | None = None


def build_config(module: str, scale: str, seed: int | None, overrides: list[str]) -> ExperimentConfig:
    """The config a run of ``module`` would use: the scale preset, then ``--set`` overrides, then ``--seed``.

    Raises:
        ConfigError: for an unknown scale or key, a value of the wrong type or range, unreadable user data, or a
            device this machine does not have.
    """
    experiment = load_experiment(module)
    config = apply_overrides(experiment.config_cls.preset(scale), overrides)
    if seed is not None:
        config = replace(config, seed=seed)
    check_device(config)
    return config


def check_device(config: ExperimentConfig) -> None:
    """Fail before any work if ``config`` names a device this machine lacks (e.g. a gpu preset without CUDA).

    Raises:
        ConfigError: naming the ``device`` field and the fix (``--set device=cpu``).
    """
    device = getattr(config, "device", None)
    if isinstance(device, str):
        resolve_device(device)


def run_device(config: ExperimentConfig, world: World) -> torch.device:
    """The device of a run, resolved once: the config's ``device`` field (this rank's GPU for ``cuda`` under
    torchrun), or the CPU for a config without one.

    Raises:
        ConfigError: naming the ``device`` field, for a device this machine lacks.
    """
    import torch

    name = getattr(config, "device", None)
    if not isinstance(name, str):
        return torch.device("cpu")
    device = resolve_device(name)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", world.local_rank)
    return device


def data_parallel_modules() -> list[str]:
    """The implemented modules whose reproduction supports data parallelism (``Experiment.data_parallel``)."""
    names = []
    for entry in implemented():
        try:
            if load_experiment(entry.module).data_parallel:
                names.append(entry.module)
        except Exception:  # noqa: BLE001, S112 - a module whose extra is missing cannot be run at all
            continue
    return names


def check_data_parallel(module: str, world: World, config: ExperimentConfig | None = None) -> None:
    """Fail before any work if ``module`` cannot run in ``world`` (more than one process under torchrun).

    Raises:
        DistributedError: if the module does not declare ``data_parallel``; the message names the modules that do.
            Also for a config whose ``device`` names one GPU (``cuda:N``): every rank would take the same one.
    """
    if not world.is_distributed:
        return
    if module == "all":
        raise DistributedError("under torchrun run one module at a time, not 'all'")
    if not load_experiment(module).data_parallel:
        supported = ", ".join(data_parallel_modules()) or "none yet"
        raise DistributedError(
            f"{module} does not support data parallelism yet (torchrun with WORLD_SIZE={world.size}); run it as "
            f"one process (plain `iclr26 run {module}`). Modules that support torchrun: {supported}; the others "
            "are not yet supported"
        )
    device = getattr(config, "device", None)
    if isinstance(device, str) and device.startswith("cuda:"):
        raise DistributedError(
            f"config field 'device': {device!r} would put every rank on one GPU under torchrun; use --set "
            "device=cuda (each rank takes cuda:LOCAL_RANK)"
        )


def prepare_run_dir(out: Path, module: str) -> Path:
    """Create ``out/module/<stamp>`` and check that it takes every file the run will write.

    The check writes and removes a file whose name is as long as the longest plot or unit name
    (:data:`~iclr26.common.experiment.MAX_NAME_LEN`) inside ``units/``. On failure nothing is left behind.

    Raises:
        OutputError: if ``out`` is a file, not writable, or its path too long for the file system.
    """
    out = Path(out)
    created: list[Path] = []
    run_dir: Path | None = None
    try:
        if out.exists() and not out.is_dir():
            raise OutputError(f"--out {str(out)!r} is a file, not a folder; pass a folder (it is created if missing)")
        created = [p for p in (out, out / module) if not p.exists()]
        run_dir = new_run_dir(out, module)
        probe = run_dir / UNITS_DIR / ("x" * (MAX_NAME_LEN + len(".pkl")))
        probe.parent.mkdir()
        probe.write_bytes(b"probe")
        probe.unlink()
        probe.parent.rmdir()
        return run_dir
    except OSError as err:
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)
        for path in reversed(created):
            shutil.rmtree(path, ignore_errors=True)
        why = {
            errno.ENAMETOOLONG: "its path is too long for the file system",
            errno.EACCES: "it is not writable",
            errno.EPERM: "it is not writable",
            errno.EROFS: "it lies on a read-only file system",
            errno.ENOTDIR: "a part of its path is a file",
            errno.ENOSPC: "the disk is full",
            errno.ENOENT: "it cannot be created there",
        }.get(err.errno, f"it cannot be written ({err.strerror or err})")
        raise OutputError(f"--out {str(out)!r}: {why}; pass a writable folder with a shorter path") from None


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its finished child processes (e.g. solver workers).

    Unlike wall time it hardly depends on what else the machine runs, so it is the run's cost to compare with a
    budget; both are in the record, neither decides a verdict.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def resume_config(run_dir: Path, module: str) -> tuple[ExperimentConfig, str]:
    """The config and scale of the interrupted run in ``run_dir`` (from its ``run.json``).

    Raises:
        ResumeError: if the folder is not a run of ``module``, or already has its record.
    """
    import json

    run_dir = Path(run_dir)
    run_file = run_dir / RUN_FILE
    if not run_file.is_file():
        raise ResumeError(f"--resume {str(run_dir)!r}: no {RUN_FILE} there; pass the folder of a run of {module}")
    if (run_dir / RESULT_FILE).is_file():
        raise ResumeError(f"--resume {str(run_dir)!r}: that run finished (it has {RESULT_FILE}); nothing to resume")
    try:
        started = json.loads(run_file.read_text(encoding="utf-8"))
        recorded_module, scale, values = started["module"], started["scale"], started["config"]
    except (ValueError, KeyError) as err:
        raise ResumeError(f"--resume {str(run_dir)!r}: {RUN_FILE} is damaged ({err}); start a fresh run") from None
    if recorded_module != module:
        raise ResumeError(f"--resume {str(run_dir)!r} is a run of {recorded_module}, not {module}")
    config = load_experiment(module).config_cls.from_dict(values)
    check_device(config)
    return config, scale


def run_experiment(
    module: str,
    config: ExperimentConfig,
    *,
    scale: str,
    out: Path,
    quiet: bool = False,
    resume_dir: Path | None = None,
) -> RunSummary:
    """Run ``module``'s reproduction with ``config`` and write ``out/module/<stamp>/result.json``, then its plots.

    Args:
        module: the paper's module name (or ``selfcheck``).
        config: a validated config (:func:`build_config` or :func:`resume_config`).
        scale: the preset the config came from, for the record.
        out: the records folder.
        quiet: no progress bars.
        resume_dir: the folder of an interrupted run to continue: its finished units are read back, not redone.

    Under torchrun (an initialised process group) every rank calls this; see the module docstring.

    Raises:
        OutputError: if ``out`` cannot take the run's files (nothing is written then).
        DistributedError: under torchrun, for a module without data-parallel support (nothing is written then).
        KeyboardInterrupt: after marking the folder with ``interrupted.txt`` (resume it with ``--resume``).
        Exception: whatever the reproduction raised; the folder keeps ``error.txt`` with the traceback.
    """
    entry = paper(module)
    experiment = load_experiment(module)
    world = current_world()
    check_data_parallel(module, world, config)

    def start() -> Path:  # on rank 0 only; the other ranks receive the folder (or the error)
        if resume_dir is None:
            run_dir = prepare_run_dir(out, module)
            write_json_atomic(run_dir / RUN_FILE, {"module": module, "scale": scale, "config": config.to_dict()})
            return run_dir
        for name in (INTERRUPTED_FILE, ERROR_FILE):
            (Path(resume_dir) / name).unlink(missing_ok=True)
        return Path(resume_dir)

    run_dir = on_main(start)
    ctx = RunContext(out_dir=run_dir, seed=config.seed, quiet=quiet, world=world, device=run_device(config, world))
    started = datetime.now(UTC)
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    seed_everything(config.seed)
    try:
        outcome = experiment.run(config, ctx)
    except KeyboardInterrupt:
        if world.is_main:
            launch = f"torchrun --nproc_per_node={world.size} -m iclr26" if world.is_distributed else "iclr26"
            (run_dir / INTERRUPTED_FILE).write_text(
                f"interrupted at {datetime.now(UTC).isoformat(timespec='seconds')} after {len(ctx.units)} "
                f"finished unit(s); continue with: {launch} run {module} --resume {run_dir}\n",
                encoding="utf-8",
            )
        raise
    except BaseException:
        if world.is_main:
            (run_dir / ERROR_FILE).write_text(traceback.format_exc(), encoding="utf-8")
        raise
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
    if world.is_distributed:
        (cpu,) = all_reduce_sum([cpu])  # the run's cost: CPU seconds of every rank
    if not world.is_main:  # rank 0 writes the record and the plots
        return RunSummary(run_dir=run_dir, outcome=outcome, wall_time_s=wall, resumed_units=tuple(ctx.resumed_units))
    record = {
        "schema": SCHEMA_VERSION,
        "module": module,
        "paper": entry.number,
        "title": entry.title,
        "scale": scale,
        "seed": config.seed,
        "config": config.to_dict(),
        "world_size": world.size,
        **environment(),
        "git_commit": git_commit(),
        "started_utc": started.isoformat(timespec="seconds"),
        "wall_time_s": round(wall, 3),
        "cpu_time_s": round(cpu, 3),
        "claim": entry.claim,
        "claim_held": outcome.claim_held,
        "failed_gates": list(outcome.failed_gates),
        "verdict_meaningful": scale != "smoke",
        "evidence": outcome.evidence,
        "measurement": outcome.measurement,
        "notes": outcome.notes,
        "metrics": outcome.metrics,
        "timings": outcome.timings,
        "units": ctx.units,
        "resumed_units": ctx.resumed_units,
        "plots": ctx.plots,
    }
    write_json_atomic(run_dir / RESULT_FILE, record)  # the measurements are safe before any plot is drawn
    shutil.rmtree(run_dir / UNITS_DIR, ignore_errors=True)  # only an unfinished run needs its units
    plot_errors = {}
    for name, fig in ctx.figures.items():
        try:
            savefig(fig, run_dir / name)
        except Exception as err:  # noqa: BLE001 - any failure of one plot is noted, the others still saved
            plot_errors[name] = f"{type(err).__name__}: {err}"
    if plot_errors:
        record["plot_errors"] = plot_errors
        write_json_atomic(run_dir / RESULT_FILE, record)
    return RunSummary(
        run_dir=run_dir,
        outcome=outcome,
        wall_time_s=wall,
        resumed_units=tuple(ctx.resumed_units),
        plot_errors=plot_errors or None,
    )


__all__ = [
    "ConfigError",
    "DistributedError",
    "OutputError",
    "ResumeError",
    "RunSummary",
    "build_config",
    "check_data_parallel",
    "check_device",
    "data_parallel_modules",
    "prepare_run_dir",
    "resume_config",
    "run_device",
    "run_experiment",
]
