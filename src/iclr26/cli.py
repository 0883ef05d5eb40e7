"""The `iclr26` command: `list`, `run MODULE|all`, `report`.

Examples::

    iclr26 list
    iclr26 run seesaw --scale smoke --seed 1 --set lr=3e-3
    iclr26 run seesaw --help-config
    iclr26 run seesaw --resume runs/seesaw/<stamp>
    iclr26 run all --scale cpu
    iclr26 report --readmes
    torchrun --nproc_per_node=2 -m iclr26 run kern --scale gpu   # data parallel, modules with data_parallel=True

Exit status: 0 success, 1 a reproduction failed, 2 bad input (nothing written), 130 interrupted (Ctrl-C) or 143
terminated (SIGTERM); an interrupted or terminated run's folder is marked and resumes with ``--resume``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from iclr26.catalog import (
    PAPERS,
    MissingExtra,
    UnknownModule,
    implemented,
    is_implemented,
    load_experiment,
    paper,
)
from iclr26.common.config import SCALE_NAMES, SEED_MAX, ConfigError, field_help
from iclr26.common.distributed import (
    TIMEOUT_ENV,
    DistributedError,
    destroy_process_group,
    init_process_group,
    on_main,
    timeout_s,
    world_from_env,
)
from iclr26.common.experiment import UnitError
from iclr26.common.records import latest_record
from iclr26.report import refresh_readme, refresh_status, report_markdown, verdict
from iclr26.runall import run_all
from iclr26.runner import (
    OutputError,
    RecordError,
    ResumeError,
    build_config,
    check_data_parallel,
    resume_config,
    run_experiment,
)

BAD_INPUT = (
    UnknownModule,
    ConfigError,
    MissingExtra,
    LookupError,
    OutputError,
    ResumeError,
    UnitError,
    DistributedError,
)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, so a run stops as on Ctrl-C: its folder marked and resumable."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


def _forget_interrupted_eval() -> None:
    """Keep the exit status the CLI returns after a Ctrl-C it handled.

    CPython remembers a KeyboardInterrupt that ended a string ``exec``/``eval`` (``dataclasses`` and ``namedtuple``
    build their methods that way) even when a caller catches it, and under ``python -m`` the interpreter then ends
    by killing itself with SIGINT: the parent sees -2, not 130 (``unhandled_keyboard_interrupt`` in CPython's
    ``Modules/main.c``). CPython 3.11 clears that flag at the start of every string eval, so an empty one clears
    it; ``tests/test_runner.py`` checks the status under the interpreter that runs the tests.
    """
    exec("")  # noqa: S102


def max_threads() -> int:
    """The most torch threads a run may ask for: the machine's cores (more only oversubscribes them)."""
    return os.cpu_count() or 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iclr26", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p_list = sub.add_parser("list", help="the 19 papers, implemented or not, with their last result")
    p_list.add_argument("--out", type=Path, default=Path("runs"), help="where run records live (default: runs)")
    p_list.add_argument(
        "--scale", choices=SCALE_NAMES, default="cpu", help="show the latest record of this scale (default: cpu)"
    )

    p_run = sub.add_parser("run", help="run one reproduction (or all implemented ones)")
    p_run.add_argument("module", help="module name (see `iclr26 list`), 'selfcheck', or 'all'")
    p_run.add_argument("--scale", choices=SCALE_NAMES, default="cpu", help="config preset (default: cpu)")
    p_run.add_argument("--seed", type=int, default=None, help="master seed (default: the config's)")
    p_run.add_argument("--out", type=Path, default=Path("runs"), help="records go to OUT/MODULE/<stamp>/")
    p_run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field (repeatable); the value is parsed by the field's type",
    )
    p_run.add_argument("--quiet", action="store_true", help="no progress bars")
    p_run.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads (default: $ICLR26_THREADS, else torch's default); 1 is best on a busy machine",
    )
    p_run.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="with 'all': papers run at a time, each in its own process on one thread (default: the machine's cores)",
    )
    p_run.add_argument("--help-config", action="store_true", help="list the config fields and exit")
    p_run.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="RUN_DIR",
        help="continue an interrupted run in RUN_DIR with its own config; finished units of work are not redone",
    )

    p_rep = sub.add_parser("report", help="gather the latest records of one scale into OUT/report.md")
    p_rep.add_argument("--out", type=Path, default=Path("runs"), help="where run records live (default: runs)")
    p_rep.add_argument(
        "--scale", choices=SCALE_NAMES, default="cpu", help="report the latest record of this scale (default: cpu)"
    )
    p_rep.add_argument(
        "--readmes",
        action="store_true",
        help="also refresh the generated results block of each module README from its latest record",
    )
    return parser


def _records_folder(out: Path) -> None:
    """Fail before reading if ``--out`` names no folder of run records.

    Raises:
        OutputError: naming ``--out``: a missing path, or a file.
    """
    if not out.exists():
        raise OutputError(f"--out {str(out)!r} does not exist; pass the folder runs are written to (default: runs)")
    if not out.is_dir():
        raise OutputError(f"--out {str(out)!r} is a file, not a folder of run records")


def cmd_list(args: argparse.Namespace) -> int:
    _records_folder(args.out)
    print(f"records read from {args.out.resolve()} (latest `{args.scale}` record of each paper)")
    print(f"{'#':>2}  {'module':<13}{'name':<21}{'implemented':<13}last result")
    for p in PAPERS:
        rec = latest_record(args.out, p.module, args.scale)
        last = verdict(rec) + (f" ({rec.data['scale']}, {rec.data['started_utc'][:10]})" if rec else "")
        print(f"{p.number:>2}  {p.module:<13}{p.name:<21}{'yes' if is_implemented(p.module) else 'no':<13}{last}")
    return 0


def _run_one(module: str, args: argparse.Namespace) -> int:
    if args.resume is not None:  # rank 0 reads run.json under torchrun; every rank gets its config (or error)
        config, scale = on_main(lambda: resume_config(args.resume, module))
    else:
        config, scale = build_config(module, args.scale, args.seed, args.overrides), args.scale
    summary = run_experiment(module, config, scale=scale, out=args.out, quiet=args.quiet, resume_dir=args.resume)
    if not world_from_env().is_main:
        return 0  # rank 0 reports
    if scale == "smoke":
        print(f"[{module}] smoke run finished (a smoke run checks that the code runs; its verdict is not meaningful)")
    else:
        print(f"[{module}] claim {summary.outcome.claim_held.upper()}: {summary.outcome.measurement}")
    resumed = f", {len(summary.resumed_units)} unit(s) resumed" if summary.resumed_units else ""
    print(f"[{module}] record: {summary.run_dir / 'result.json'} ({summary.wall_time_s:.1f} s{resumed})")
    for name, err in (summary.plot_errors or {}).items():
        print(f"[{module}] plot {name} not saved: {err} (noted in the record)", file=sys.stderr)
    return 0


def _run_all(args: argparse.Namespace, threads: int | None) -> int:
    """``run all``: every implemented paper, ``--jobs`` at a time (:mod:`iclr26.runall`)."""
    if args.overrides or args.help_config or args.resume:
        raise ConfigError("--set, --resume and --help-config need one module, not 'all'")
    jobs = max_threads() if args.jobs is None else args.jobs
    if not 1 <= jobs <= max_threads():
        raise ConfigError(f"--jobs must be an integer from 1 to {max_threads()} (this machine's cores), got {jobs}")
    papers = implemented()
    if not papers:
        print("no paper is implemented yet; nothing to run")
        return 0
    tail = ["--scale", args.scale, "--out", str(args.out), "--quiet"]
    if args.seed is not None:
        tail += ["--seed", str(args.seed)]
    modules = [p.module for p in papers]
    return run_all(modules, tail, out=args.out, scale=args.scale, jobs=jobs, threads=threads)


def _threads(args: argparse.Namespace) -> int | None:
    """The thread count of ``--threads`` or ``$ICLR26_THREADS`` (None: torch's default).

    Raises:
        ConfigError: naming the option or variable, for a value that is not an integer from 1 to the machine's
            cores (:func:`max_threads`).
    """
    cap = max_threads()
    if args.threads is not None:
        if not 1 <= args.threads <= cap:
            raise ConfigError(
                f"--threads must be an integer from 1 to {cap} (this machine's cores), got {args.threads}"
            )
        return args.threads
    text = os.environ.get("ICLR26_THREADS", "").strip()
    if not text:
        return None
    if not text.isdigit() or not 1 <= int(text) <= cap:
        raise ConfigError(
            f"environment variable ICLR26_THREADS must be an integer from 1 to {cap} (this machine's cores), "
            f"got {text!r}"
        )
    return int(text)


#: The device check's committed output (``benchmarks/gpu_presets.py``), when the package runs from a checkout.
GPU_CHECK = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_presets.json"


def gpu_projection(module: str, path: Path = GPU_CHECK) -> str:
    """The line ``--help-config`` shows for a module's gpu preset: its projected wall time from the committed
    device check, or that none has been measured."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        row = next(r for r in report["slices"] if r["module"] == module)
    except (OSError, ValueError, KeyError, StopIteration):
        return "gpu preset: no projected time yet (the device check, benchmarks/gpu_presets.py, has not timed it)"
    if row.get("projected_h") is None:
        return f"gpu preset: not projected by the device check of {report.get('date')} ({row.get('error') or 'failed'})"
    return (
        f"gpu preset: about {row['projected_h']:g} h on one {report.get('device_name')} (projected from a timed slice "
        f"by the device check of {report.get('date')}, benchmarks/gpu_presets.md)"
    )


def _help_config(module: str) -> None:
    experiment = load_experiment(module)
    cls = experiment.config_cls
    print(f"config fields of {module} ({cls.__name__}); set with --set KEY=VALUE")
    if cls.CPU_BOUND:
        print(f"runs on the CPU at every scale: {cls.CPU_BOUND}")
    else:
        print(gpu_projection(module))
    if cls.ALIASES:
        print("aliases: " + ", ".join(f"{old} -> {new}" for old, new in sorted(cls.ALIASES.items())))
    print(f"  {'field':<24} {'type':<28} {'default (cpu)':<18} {'smoke / gpu preset':<22} {'range':<16} help")
    for row in field_help(cls):
        presets = " / ".join(row.presets.get(s, "=") for s in ("smoke", "gpu"))
        print(f"  {row.name:<24} {row.type:<28} {row.default:<18} {presets:<22} {row.range:<16} {row.help}")


def cmd_run(args: argparse.Namespace) -> int:
    if args.seed is not None and not 0 <= args.seed <= SEED_MAX:
        raise ConfigError(f"--seed must be an integer from 0 to {SEED_MAX}, got {args.seed}")
    threads = _threads(args)
    if threads:
        import torch

        torch.set_num_threads(threads)
    world = world_from_env()
    if world.is_distributed and not args.help_config:
        check_data_parallel(args.module, world)  # before any work: exit 2 on every rank
    if args.module == "all":
        return _run_all(args, threads)
    if args.jobs is not None:
        raise ConfigError("--jobs goes with 'run all'; one module runs in one process")
    paper(args.module)
    if args.help_config:
        _help_config(args.module)
        return 0
    if args.resume is not None and (args.overrides or args.seed is not None):
        raise ConfigError("--resume continues a run with its own config; drop --set and --seed")
    if not world.is_distributed:
        return _run_one(args.module, args)
    init_process_group(world)  # NCCL/gloo with a timeout: a dead or hung rank ends the run with an error
    try:
        code = _run_one(args.module, args)
    except BaseException:
        destroy_process_group()
        raise
    # Leave together: a rank that tears gloo down while its peer still works (rank 0 writing the record) could abort
    # the peer in gloo's worker threads ("terminate called without an active exception", seen once in CI).
    destroy_process_group(synchronise=True)
    return code


def report_file(scale: str) -> str:
    """The report's file name: ``report.md`` for cpu records, ``report-<scale>.md`` for the other scales (a smoke
    report never overwrites the committed one)."""
    return "report.md" if scale == "cpu" else f"report-{scale}.md"


def cmd_report(args: argparse.Namespace) -> int:
    if args.out.exists() and not args.out.is_dir():
        raise OutputError(f"--out {str(args.out)!r} is a file, not a folder of run records")
    target = args.out / report_file(args.scale)
    text = report_markdown(args.out, args.scale)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as err:
        raise OutputError(f"--out {str(args.out)!r}: {target.name} cannot be written ({err.strerror or err})") from None
    print(text, end="")
    print(f"written: {target}")
    if args.readmes:
        src_root = Path(__file__).resolve().parent
        changed = [p.module for p in PAPERS if refresh_readme(p, args.out, src_root, args.scale)]
        top = src_root.parents[1] / "README.md"  # the checkout's README, when the package runs from a checkout
        if (top.parent / "pyproject.toml").is_file() and refresh_status(top, args.out, args.scale):
            changed.append("top README status table")
        print(f"README results blocks refreshed from `{args.scale}` records: {', '.join(changed) or 'none'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `iclr26` command; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    try:
        world = world_from_env()
    except DistributedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    rank = f"[rank {world.rank}/{world.size}] " if world.is_distributed else ""
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return {"list": cmd_list, "run": cmd_run, "report": cmd_report}[args.command](args)
    except BAD_INPUT as err:
        print(f"{rank}error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        what = "terminated (SIGTERM)" if isinstance(err, Terminated) else "interrupted (Ctrl-C)"
        resume = getattr(err, "resume_command", None)
        print(f"{rank}{what}; " + (f"continue with: {resume}" if resume else "nothing was left to resume"),
              file=sys.stderr)  # fmt: skip
        _forget_interrupted_eval()
        return 143 if isinstance(err, Terminated) else 130
    except RecordError as err:
        print(f"{rank}error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`iclr26 list | head`): stop quietly, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as err:
        if world.is_distributed:  # torchrun interleaves the ranks' output: say which rank failed, and why
            print(f"{rank}failed: {type(err).__name__}: {err}".rstrip(), file=sys.stderr)
            if any(word in str(err).lower() for word in ("timed out", "timeout", "connection", "gloo", "nccl")):
                print(
                    f"{rank}a collective failed: another rank stopped or hung (see its '[rank N/{world.size}] "
                    f"failed' line); collectives wait at most {timeout_s():g} s ({TIMEOUT_ENV})",
                    file=sys.stderr,
                )
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    raise SystemExit(main())
