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
import fcntl
import json
import os
import resource
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import torch

from iclr26.catalog import implemented, load_experiment, paper
from iclr26.common.config import SCALE_NAMES, ConfigError, ExperimentConfig, apply_overrides
from iclr26.common.device import resolve_device
from iclr26.common.distributed import DistributedError, World, all_reduce_sum, current_world, on_main
from iclr26.common.experiment import (
    MAX_NAME_LEN,
    UNITS_DIR,
    Outcome,
    RunContext,
    UnitError,
    check_units,
    config_digest,
)
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


class OutputError(ValueError):
    """The output folder cannot take the run's files; the message names ``--out`` and the fix."""


class ResumeError(ValueError):
    """A folder given to ``--resume`` cannot be resumed; the message says why."""


LOCK_FILE = ".lock"
ELAPSED_FILE = "elapsed.json"


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
    name = getattr(config, "device", None)
    if not isinstance(name, str):
        return torch.device("cpu")
    device = resolve_device(name)
    if device.type == "cuda" and device.index is None:  # this rank's GPU (init_process_group set it current)
        device = torch.device("cuda", torch.cuda.current_device())
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
    """The config and scale of the interrupted run in ``run_dir`` (from its ``run.json``), after checking that the
    folder can be resumed: ``run.json`` well formed, every stored unit whole and of this config
    (:func:`~iclr26.common.experiment.check_units`), and no other process working on the folder.

    Raises:
        ResumeError: if the folder is not a run of ``module``, already has its record, or another process holds it.
        UnitError: naming a damaged or foreign unit file and the fix.
    """
    run_dir = Path(run_dir)
    run_file = run_dir / RUN_FILE
    if not run_file.is_file():
        raise ResumeError(f"--resume {str(run_dir)!r}: no {RUN_FILE} there; pass the folder of a run of {module}")
    if (run_dir / RESULT_FILE).is_file():
        raise ResumeError(f"--resume {str(run_dir)!r}: that run finished (it has {RESULT_FILE}); nothing to resume")
    damaged = f"--resume {str(run_dir)!r}: {RUN_FILE} is damaged"
    try:
        started = json.loads(run_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ResumeError(f"{damaged} ({type(err).__name__}); start a fresh run") from None
    if not isinstance(started, dict) or not isinstance(started.get("config"), dict):
        raise ResumeError(f"{damaged} (not an object with a 'config' object); start a fresh run")
    recorded_module, scale = started.get("module"), started.get("scale")
    if recorded_module != module:
        raise ResumeError(f"--resume {str(run_dir)!r} is a run of {recorded_module}, not {module}")
    if scale not in SCALE_NAMES:
        raise ResumeError(f"{damaged} (scale {scale!r}); start a fresh run")
    config = load_experiment(module).config_cls.from_dict(started["config"])
    check_device(config)
    check_units(run_dir, config_digest(module, config.to_dict()))
    with RunLock(run_dir):  # fail now, before any work, if another process holds the folder
        pass
    return config, scale


class RunLock:
    """An exclusive lock on a run folder (``.lock``, ``flock``): one process at a time runs or resumes it.

    Raises:
        ResumeError: on entry, if another process holds the folder.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ResumeError(
                f"{self.path.parent} is being run or resumed by another process; wait for it to finish or stop it"
            ) from None
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@dataclass
class Elapsed:
    """The wall and CPU seconds of a run over all its legs (an interrupted run and each resume), kept in
    ``elapsed.json`` after every unit so that a killed leg's finished work still counts."""

    run_dir: Path
    before_wall: float = 0.0
    before_cpu: float = 0.0
    legs: int = 1

    def __post_init__(self) -> None:
        self._t0, self._cpu0 = time.perf_counter(), _cpu_seconds()
        path = self.run_dir / ELAPSED_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
            self.before_wall, self.before_cpu = float(data.get("wall_s", 0.0)), float(data.get("cpu_s", 0.0))
            self.legs = int(data.get("legs", 0)) + 1
        except (ValueError, TypeError, AttributeError):  # a damaged time file loses the earlier legs' time only
            self.before_wall, self.before_cpu, self.legs = 0.0, 0.0, 1

    def leg(self) -> tuple[float, float]:
        """This leg's wall and CPU seconds so far."""
        return time.perf_counter() - self._t0, _cpu_seconds() - self._cpu0

    def total(self, cpu: float | None = None) -> tuple[float, float]:
        """Wall and CPU seconds of all legs so far (``cpu``: this leg's CPU time, e.g. summed over ranks)."""
        wall, own_cpu = self.leg()
        return self.before_wall + wall, self.before_cpu + (own_cpu if cpu is None else cpu)

    def save(self) -> None:
        wall, cpu = self.total()
        write_json_atomic(self.run_dir / ELAPSED_FILE, {"wall_s": wall, "cpu_s": cpu, "legs": self.legs})


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
    digest = config_digest(module, config.to_dict())
    locks: list[RunLock] = []

    def start() -> Path:  # on rank 0 only; the other ranks receive the folder (or the error)
        if resume_dir is None:
            run_dir = prepare_run_dir(out, module)
            locks.append(RunLock(run_dir).__enter__())  # held until the run ends: one process per folder
            write_json_atomic(run_dir / RUN_FILE, {"module": module, "scale": scale, "config": config.to_dict()})
            return run_dir
        check_units(Path(resume_dir), digest)
        locks.append(RunLock(Path(resume_dir)).__enter__())
        for name in (INTERRUPTED_FILE, ERROR_FILE):
            (Path(resume_dir) / name).unlink(missing_ok=True)
        return Path(resume_dir)

    run_dir = on_main(start)
    try:
        return _run_in(run_dir, module, entry, experiment, config, scale, quiet, world, digest)
    finally:
        for lock in locks:
            lock.__exit__()


def _run_in(run_dir, module, entry, experiment, config, scale, quiet, world, digest) -> RunSummary:  # noqa: ANN001
    """The run proper in its folder: the reproduction, then (on rank 0) the record and the plots."""
    elapsed = Elapsed(run_dir) if world.is_main else None
    ctx = RunContext(
        out_dir=run_dir,
        seed=config.seed,
        quiet=quiet,
        world=world,
        device=run_device(config, world),
        config_digest=digest,
        on_unit=elapsed.save if elapsed is not None else None,
    )
    started = datetime.now(UTC)
    seed_everything(config.seed)
    try:
        outcome = experiment.run(config, ctx)
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM (the CLI raises Terminated, a KeyboardInterrupt)
        launch = f"torchrun --nproc_per_node={world.size} -m iclr26" if world.is_distributed else "iclr26"
        err.resume_command = f"{launch} run {module} --resume {run_dir}"  # type: ignore[attr-defined]
        if world.is_main:
            elapsed.save()
            (run_dir / INTERRUPTED_FILE).write_text(
                f"interrupted at {datetime.now(UTC).isoformat(timespec='seconds')} after {len(ctx.units)} "
                f"finished unit(s); continue with: {err.resume_command}\n",  # type: ignore[attr-defined]
                encoding="utf-8",
            )
        raise
    except BaseException:
        if world.is_main:
            elapsed.save()
            (run_dir / ERROR_FILE).write_text(traceback.format_exc(), encoding="utf-8")
        raise
    wall, cpu = elapsed.leg() if elapsed is not None else (0.0, _cpu_seconds())
    if world.is_distributed:
        (cpu,) = all_reduce_sum([cpu])  # the run's cost: CPU seconds of every rank
    if not world.is_main:  # rank 0 writes the record and the plots
        return RunSummary(run_dir=run_dir, outcome=outcome, wall_time_s=wall, resumed_units=tuple(ctx.resumed_units))
    total_wall, total_cpu = elapsed.total(cpu)
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
        "wall_time_s": round(total_wall, 3),
        "cpu_time_s": round(total_cpu, 3),
        "legs": elapsed.legs,
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
    _write_record(run_dir, record)
    shutil.rmtree(run_dir / UNITS_DIR, ignore_errors=True)  # only an unfinished run needs its units
    for name in (ELAPSED_FILE, LOCK_FILE):  # a finished run needs neither its elapsed time nor its lock
        (run_dir / name).unlink(missing_ok=True)
    plot_errors = {}
    for name, fig in ctx.figures.items():
        try:
            savefig(fig, run_dir / name)
        except Exception as err:  # noqa: BLE001 - any failure of one plot is noted, the others still saved
            plot_errors[name] = f"{type(err).__name__}: {err}"
    if plot_errors:
        record["plot_errors"] = plot_errors
        _write_record(run_dir, record)
    return RunSummary(
        run_dir=run_dir,
        outcome=outcome,
        wall_time_s=total_wall,
        resumed_units=tuple(ctx.resumed_units),
        plot_errors=plot_errors or None,
    )


class RecordError(RuntimeError):
    """``result.json`` could not be written; the measurement was printed and kept where it could be."""


def _write_record(run_dir: Path, record: dict) -> None:
    """Write ``result.json``; if that fails, print the verdict and measurement and keep the record in
    ``error.txt`` (or say that it could not be kept), so a finished run's measurement is never lost silently.

    Raises:
        RecordError: naming the file and the reason, after the fallback.
    """
    try:
        write_json_atomic(run_dir / RESULT_FILE, record)  # the measurements are safe before any plot is drawn
        return
    except (OSError, TypeError, ValueError) as err:
        reason = f"{type(err).__name__}: {err}"
    print(
        f"[{record['module']}] could not write {run_dir / RESULT_FILE} ({reason}); the run's verdict: "
        f"{record['claim_held']}: {record['measurement']}",
        file=sys.stderr,
    )
    try:
        text = json.dumps(record, indent=1, default=str)
        (run_dir / ERROR_FILE).write_text(f"result.json could not be written ({reason}); the record:\n{text}\n")
        kept = f"the record is kept in {run_dir / ERROR_FILE}"
    except OSError:
        kept = "it could not be kept in error.txt either (the folder is not writable)"
    raise RecordError(f"{RESULT_FILE} of {run_dir} not written ({reason}); {kept}")


__all__ = [
    "ConfigError",
    "DistributedError",
    "OutputError",
    "RecordError",
    "ResumeError",
    "RunLock",
    "RunSummary",
    "UnitError",
    "build_config",
    "check_data_parallel",
    "check_device",
    "data_parallel_modules",
    "prepare_run_dir",
    "resume_config",
    "run_device",
    "run_experiment",
]
