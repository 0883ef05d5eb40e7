"""Write the smoke record of every module into a folder, or compare two such folders.

A refactor that must not change any result is checked with it: write the records before the change and after it,
then compare. Only the measured parts are compared (``metrics``; with ``--strict`` also ``measurement`` and
``evidence``), since a change of the record's layout (config fields, the verdict's encoding) is not a change of
results::

    python tools/smoke_records.py write /tmp/before            # at the old commit
    python tools/smoke_records.py write /tmp/after             # at the new one
    python tools/smoke_records.py compare /tmp/before /tmp/after

``write`` runs the modules one after another on one thread each (``--jobs N`` runs N at once); ``compare`` prints one
line per module and exits 1 if any differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from iclr26.catalog import implemented


def _write_one(module: str, out: Path) -> str:
    env = {**os.environ, "ICLR26_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "iclr26", "run", module, "--scale", "smoke", "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return f"{module}: {'ok' if proc.returncode == 0 else 'FAILED ' + proc.stderr.strip().splitlines()[-1:][0]}"


def write(out: Path, modules: list[str], jobs: int) -> None:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for line in pool.map(lambda m: _write_one(m, out), modules):
            print(line, flush=True)


def _latest(out: Path, module: str) -> dict | None:
    records = sorted((out / module).glob("*/result.json"))
    return json.loads(records[-1].read_text()) if records else None


def compare(before: Path, after: Path, modules: list[str], strict: bool) -> int:
    keys = ("metrics", "measurement", "evidence") if strict else ("metrics",)
    differ = 0
    for module in modules:
        a, b = _latest(before, module), _latest(after, module)
        if a is None or b is None:
            print(f"{module}: missing in {'before' if a is None else 'after'}")
            differ += 1
            continue
        changed = [k for k in keys if a.get(k) != b.get(k)]
        print(f"{module}: {'identical' if not changed else 'DIFFERS in ' + ', '.join(changed)}")
        differ += bool(changed)
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_write = sub.add_parser("write")
    p_write.add_argument("out", type=Path)
    p_write.add_argument("--jobs", type=int, default=1)
    p_write.add_argument("--modules", default="", help="comma-separated (default: every implemented module)")
    p_cmp = sub.add_parser("compare")
    p_cmp.add_argument("before", type=Path)
    p_cmp.add_argument("after", type=Path)
    p_cmp.add_argument("--modules", default="")
    p_cmp.add_argument("--strict", action="store_true", help="also compare measurement and evidence")
    args = parser.parse_args()
    modules = args.modules.split(",") if args.modules else [p.module for p in implemented()]
    if args.command == "write":
        write(args.out, modules, args.jobs)
        return 0
    return compare(args.before, args.after, modules, args.strict)


if __name__ == "__main__":
    raise SystemExit(main())
