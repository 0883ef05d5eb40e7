"""The `iclr26` command: `list`, `run MODULE|all`, `report`.

Examples::

    iclr26 list
    iclr26 run seesaw --scale smoke --seed 1 --set lr=3e-3
    iclr26 run seesaw --help-config
    iclr26 run all --scale cpu
    iclr26 report --readmes
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

import torch

from iclr26.catalog import (
    PAPERS,
    MissingExtra,
    UnknownModule,
    implemented,
    is_implemented,
    load_experiment,
    paper,
)
from iclr26.common.config import SCALE_NAMES, ConfigError, field_help
from iclr26.common.records import latest_record
from iclr26.report import refresh_readme, report_markdown, verdict
from iclr26.runner import build_config, run_experiment


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iclr26", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p_list = sub.add_parser("list", help="the 19 papers, implemented or not, with their last result")
    p_list.add_argument("--out", type=Path, default=Path("runs"), help="where run records live (default: runs)")

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
    p_run.add_argument("--help-config", action="store_true", help="list the config fields and exit")

    p_rep = sub.add_parser("report", help="gather the latest records into OUT/report.md")
    p_rep.add_argument("--out", type=Path, default=Path("runs"))
    p_rep.add_argument(
        "--readmes",
        action="store_true",
        help="also refresh the generated results block of each module README from its latest record",
    )
    return parser


def cmd_list(args: argparse.Namespace) -> int:
    print(f"{'#':>2}  {'module':<13}{'name':<21}{'implemented':<13}last result")
    for p in PAPERS:
        rec = latest_record(args.out, p.module)
        last = verdict(rec) + (f" ({rec.data['scale']}, {rec.data['started_utc'][:10]})" if rec else "")
        print(f"{p.number:>2}  {p.module:<13}{p.name:<21}{'yes' if is_implemented(p.module) else 'no':<13}{last}")
    return 0


def _run_one(module: str, args: argparse.Namespace) -> int:
    config = build_config(module, args.scale, args.seed, args.overrides)
    summary = run_experiment(module, config, scale=args.scale, out=args.out, quiet=args.quiet)
    held = "HELD" if summary.outcome.claim_held else "NOT HELD"
    print(f"[{module}] claim {held}: {summary.outcome.measurement}")
    print(f"[{module}] record: {summary.run_dir / 'result.json'} ({summary.wall_time_s:.1f} s)")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    threads = args.threads or int(os.environ.get("ICLR26_THREADS", "0"))
    if threads < 0:
        print(f"error: --threads must be positive, got {threads}", file=sys.stderr)
        return 2
    if threads:
        torch.set_num_threads(threads)
    if args.module == "all":
        if args.overrides or args.help_config:
            print("error: --set and --help-config need one module, not 'all'", file=sys.stderr)
            return 2
        papers = implemented()
        if not papers:
            print("no paper is implemented yet; nothing to run")
            return 0
        failed = []
        for p in papers:
            print(f"== paper {p.number}: {p.name} ({p.module}) at scale {args.scale}", flush=True)
            try:
                _run_one(p.module, args)
            except Exception:  # one failing paper must not stop the others
                traceback.print_exc()
                print(f"[{p.module}] FAILED", file=sys.stderr)
                failed.append(p.module)
        print(f"ran {len(papers)} papers; failed: {', '.join(failed) or 'none'}")
        return 1 if failed else 0

    try:
        paper(args.module)
        if args.help_config:
            experiment = load_experiment(args.module)
            print(f"config fields of {args.module} ({experiment.config_cls.__name__}); set with --set KEY=VALUE")
            for name, tp, help_text in field_help(experiment.config_cls):
                print(f"  {name:<24} {tp:<28} {help_text}")
            return 0
        return _run_one(args.module, args)
    except (UnknownModule, ConfigError, MissingExtra, LookupError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def cmd_report(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    text = report_markdown(args.out)
    (args.out / "report.md").write_text(text, encoding="utf-8")
    print(text, end="")
    print(f"written: {args.out / 'report.md'}")
    if args.readmes:
        src_root = Path(__file__).resolve().parent
        changed = [p.module for p in PAPERS if refresh_readme(p, args.out, src_root)]
        print(f"README results blocks refreshed: {', '.join(changed) or 'none'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `iclr26` command; returns the exit status."""
    args = _parser().parse_args(argv)
    return {"list": cmd_list, "run": cmd_run, "report": cmd_report}[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
