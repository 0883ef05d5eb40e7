"""Run records: ``runs/<module>/<UTC stamp>/result.json``, written atomically, and reading the latest one back.

The record of one run holds the package version, the git commit (if the package runs from a checkout), the full
config, the seed, wall time, the metrics, the claim text and ``claim_held`` with the evidence it rests on.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from iclr26.common.verdict import HELD, status_of

RESULT_FILE = "result.json"
RUN_FILE = "run.json"  # written when a run starts: module, scale and config, what `--resume` needs
INTERRUPTED_FILE = "interrupted.txt"
ERROR_FILE = "error.txt"
SCHEMA_VERSION = 2
#: Keys of a record that differ between two runs of one config and seed; everything else must be identical.
NON_DETERMINISTIC_KEYS = (
    "started_utc",
    "wall_time_s",
    "cpu_time_s",
    "legs",
    "timings",
    "resumed_units",
    "plot_errors",
)


def utc_stamp(now: datetime | None = None) -> str:
    """A folder name that sorts chronologically, e.g. ``2026-12-02T13-45-01.123456Z``."""
    now = now or datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H-%M-%S.%fZ")


def new_run_dir(out: Path, module: str) -> Path:
    """Create and return a fresh ``out/module/<stamp>`` folder (a suffix keeps two runs in one microsecond apart)."""
    base = Path(out) / module
    base.mkdir(parents=True, exist_ok=True)
    stamp = utc_stamp()
    for i in range(1000):
        path = base / (stamp if i == 0 else f"{stamp}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a fresh run folder under {base}")


def jsonable(value: Any) -> Any:
    """Convert numpy/torch scalars and arrays, tuples and paths to JSON values.

    Non-finite floats become the strings ``"nan"``, ``"inf"`` and ``"-inf"`` so that the file stays strict JSON.
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):  # numpy arrays/scalars, torch tensors
        return jsonable(value.tolist())
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    raise TypeError(f"cannot write a value of type {type(value).__name__} to a run record: {value!r}")


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` so that readers see either the old file or the complete new one.

    The text goes to a temporary file in the same folder, is flushed to disk, then renamed over ``path``; a writer
    killed midway leaves at most a stray temporary file, never a partial ``path``.
    """
    path = Path(path)
    text = json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a record is meant to be read by anyone
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def git_commit(start: Path | None = None) -> str | None:
    """The commit of the checkout holding this package (``+dirty`` when it has changes), or None."""
    here = Path(start or Path(__file__).resolve().parent)
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("+dirty" if dirty else "") if sha else None


def environment() -> dict[str, str]:
    """Versions that matter for reproducing a number."""
    import numpy
    import torch

    from iclr26 import __version__

    return {
        "package_version": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
    }


@dataclass(frozen=True)
class RunRecord:
    """A ``result.json`` read back, with the folder it lives in."""

    path: Path
    data: dict[str, Any]

    @property
    def module(self) -> str:
        return self.data["module"]

    @property
    def status(self) -> str:
        """The verdict: ``held``, ``not held`` or ``inconclusive`` (older records' booleans read as the first two)."""
        return status_of(self.data["claim_held"])

    @property
    def claim_held(self) -> bool:
        """Whether the claim held (``not held`` and ``inconclusive`` are both False)."""
        return self.status == HELD


def read_record(run_dir: Path) -> RunRecord:
    """Read ``run_dir/result.json``.

    Raises:
        FileNotFoundError: if the folder has no record.
        ValueError: if the file is not a run record (not JSON, or a required key missing).
    """
    path = Path(run_dir) / RESULT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    missing = {"module", "claim", "claim_held", "metrics", "config", "scale", "started_utc"} - set(data)
    if missing:
        raise ValueError(f"{path}: not a run record, missing {sorted(missing)}")
    return RunRecord(path=Path(run_dir), data=data)


def records_newest_first(out: Path, module: str, scale: str | None = "cpu") -> Iterator[RunRecord]:
    """The complete records of ``module`` under ``out`` at ``scale`` (None: any scale), newest first.

    Folders without ``result.json`` (running, interrupted or failed runs) are skipped, and so are records of
    another scale: a smoke run never replaces the ``cpu`` verdict in ``iclr26 list`` or the report.
    """
    base = Path(out) / module
    if not base.is_dir():
        return
    for run_dir in sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.name, reverse=True):
        if (run_dir / RESULT_FILE).is_file():
            try:
                record = read_record(run_dir)
            except ValueError:
                continue
            if scale is None or record.data["scale"] == scale:
                yield record


def latest_record(out: Path, module: str, scale: str | None = "cpu") -> RunRecord | None:
    """The newest complete record of ``module`` under ``out`` at ``scale`` (:func:`records_newest_first`)."""
    return next(records_newest_first(out, module, scale), None)


def deterministic_view(record: dict[str, Any]) -> dict[str, Any]:
    """A record without the keys that vary between two runs of one config and seed (:data:`NON_DETERMINISTIC_KEYS`).

    Two runs of one config and seed, uninterrupted or resumed, must give equal views.
    """
    return {k: v for k, v in record.items() if k not in NON_DETERMINISTIC_KEYS}
