"""`iclr26 run all --jobs N`: every implemented reproduction, N at a time, each in a process of its own.

Each paper runs as ``python -m iclr26 run <module> ...`` with one torch thread (``ICLR26_THREADS=1``, unless
``--threads`` says otherwise), so N jobs keep N cores busy without oversubscribing them. The longest runs start first
(by the wall time of each paper's previous record of the scale), which shortens the whole. While they run, one line
per running paper shows its units done (against the previous record's) and the overall time left, estimated from
the previous records.

A paper that fails does not stop the others. Ctrl-C (or SIGTERM) reaches every running paper, which marks its folder
as interrupted; the unfinished ones are listed with their resume commands.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from iclr26.common.experiment import UNITS_DIR
from iclr26.common.records import RESULT_FILE, latest_record

#: Seconds between two status lines.
STATUS_EVERY_S = 30.0
#: Exit statuses of a paper that was stopped, not failed: by Ctrl-C or SIGTERM, handled (130, 143) or not yet
#: (killed by the signal while starting up).
STOPPED = {130: "interrupted", 143: "terminated", -signal.SIGINT: "interrupted", -signal.SIGTERM: "terminated"}
#: How a paper's run is started: the command line before ``run <module> ...``.
COMMAND = [sys.executable, "-m", "iclr26"]


@dataclass
class Job:
    """One paper's run: its command, its expected length and what it has done so far.

    Attributes:
        module: the paper.
        argv: the command line after ``python -m iclr26``.
        expected_s: the wall time of the paper's previous record of this scale (None without one).
        expected_units: the number of units of that record (None without one).
    """

    module: str
    argv: list[str]
    expected_s: float | None = None
    expected_units: int | None = None
    proc: subprocess.Popen | None = None
    log: Path | None = None
    started: float = 0.0
    ended: float = 0.0
    returncode: int | None = None
    known_dirs: set[str] = field(default_factory=set)

    def run_dir(self, out: Path) -> Path | None:
        """The run folder this job created (the newest one that was not there when it started)."""
        base = out / self.module
        fresh = [p for p in base.iterdir() if p.is_dir() and p.name not in self.known_dirs] if base.is_dir() else []
        return max(fresh, key=lambda p: p.name) if fresh else None

    def units_done(self, out: Path) -> int:
        run_dir = self.run_dir(out)
        return len(list((run_dir / UNITS_DIR).glob("*.pkl"))) if run_dir is not None else 0


def pause() -> None:
    """The wait between two looks at the running papers."""
    time.sleep(0.5)


def plan(modules: Sequence[str], argv_tail: list[str], out: Path, scale: str) -> list[Job]:
    """The jobs, longest expected first (papers never run before go first: their length is unknown)."""
    jobs = []
    for module in modules:
        rec = latest_record(out, module, scale)
        expected = float(rec.data["wall_time_s"]) if rec is not None else None
        units = len(rec.data.get("units", [])) if rec is not None else None
        jobs.append(Job(module, ["run", module, *argv_tail], expected, units))
    return sorted(jobs, key=lambda j: -(j.expected_s if j.expected_s is not None else float("inf")))


def makespan(expected: Sequence[float], jobs: int) -> float:
    """The wall time of running tasks of the given lengths, longest first, on ``jobs`` workers (greedy list
    scheduling, as :func:`run_all` starts them)."""
    free = [0.0] * max(1, jobs)
    for length in sorted(expected, reverse=True):
        i = free.index(min(free))
        free[i] += length
    return max(free)


def _fmt(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _remaining(job: Job, now: float) -> float:
    if job.expected_s is None:
        return 0.0
    return max(job.expected_s - (now - job.started), 0.0) if job.proc is not None else job.expected_s


def _status(running: list[Job], waiting: list[Job], out: Path, jobs: int, now: float) -> str:
    parts = []
    for job in running:
        done = job.units_done(out)
        of = f"/{job.expected_units}" if job.expected_units else ""
        parts.append(f"{job.module} {done}{of} units {_fmt(now - job.started)}")
    left = makespan([_remaining(j, now) for j in running + waiting], jobs)
    return f"[all] running: {', '.join(parts) or 'none'}; {len(waiting)} waiting; about {_fmt(left)} left"


def run_all(
    modules: Sequence[str], argv_tail: list[str], *, out: Path, scale: str, jobs: int, threads: int | None
) -> int:
    """Run every paper of ``modules`` with ``jobs`` processes at a time; returns the exit status (1 if any failed,
    130 if interrupted).

    Args:
        modules: the papers, in catalog order.
        argv_tail: the options every paper's command gets (``--scale``, ``--seed``, ``--out``, ``--quiet``).
        out: the records folder (for the previous records and the new run folders).
        scale: the scale, to find each paper's previous record.
        jobs: processes at a time.
        threads: torch threads per process (default 1).
    """
    queue = plan(modules, argv_tail, out, scale)
    known = [j.expected_s for j in queue if j.expected_s is not None]
    estimate = f"about {_fmt(makespan(known, jobs))} by the previous `{scale}` records" if known else "unknown"
    print(f"[all] {len(queue)} papers, {jobs} at a time, one process each; expected wall time {estimate}", flush=True)
    env = {**os.environ, "ICLR26_THREADS": str(threads or 1), "OMP_NUM_THREADS": str(threads or 1)}
    logs = Path(tempfile.mkdtemp(prefix="iclr26-all-"))
    waiting, running, finished = list(queue), [], []
    interrupted = False
    last_status = time.monotonic()
    try:
        while waiting or running:
            while waiting and len(running) < jobs and not interrupted:
                job = waiting.pop(0)
                base = out / job.module
                job.known_dirs = {p.name for p in base.iterdir()} if base.is_dir() else set()
                job.log = logs / f"{job.module}.log"
                with job.log.open("w") as fh:
                    job.proc = subprocess.Popen(  # a session of its own: Ctrl-C reaches it once, from here
                        [*COMMAND, *job.argv],
                        stdout=fh,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                        preexec_fn=_sigint_as_default,
                    )
                job.started = time.monotonic()
                running.append(job)
                print(f"[{job.module}] started", flush=True)
            pause()
            for job in [j for j in running if j.proc.poll() is not None]:
                running.remove(job)
                job.returncode, job.ended = job.proc.returncode, time.monotonic()
                finished.append(job)
                print(_finished_line(job, out), flush=True)
            if running and time.monotonic() - last_status >= STATUS_EVERY_S:
                print(_status(running, waiting, out, jobs, time.monotonic()), flush=True)
                last_status = time.monotonic()
            if interrupted and not running:
                break
    except KeyboardInterrupt:
        interrupted = True
        for job in running:  # each marks its folder as interrupted and stops
            if job.proc.poll() is None:
                job.proc.send_signal(signal.SIGINT)
        for job in running:
            job.returncode = job.proc.wait()
            finished.append(job)
            print(_finished_line(job, out), flush=True)
        running = []
    return _summary(finished, waiting, out, interrupted)


def _sigint_as_default() -> None:
    """In the child before it starts: SIGINT back to its default, so that the SIGINT sent on Ctrl-C stops the paper
    even when ``run all`` itself ignores SIGINT (as a shell's background ``&`` job does, which its children inherit)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _finished_line(job: Job, out: Path) -> str:
    took = _fmt(job.ended - job.started) if job.ended else "?"
    run_dir = job.run_dir(out)
    if job.returncode == 0:
        record = run_dir / RESULT_FILE if run_dir is not None else None
        return f"[{job.module}] finished in {took}" + (f": {record}" if record and record.is_file() else "")
    tail = job.log.read_text(errors="replace").strip().splitlines()[-3:] if job.log and job.log.is_file() else []
    what = STOPPED.get(job.returncode, f"FAILED (exit {job.returncode})")
    return f"[{job.module}] {what} after {took}; log {job.log}" + "".join(f"\n    {line}" for line in tail)


def _summary(finished: list[Job], waiting: list[Job], out: Path, interrupted: bool) -> int:
    failed = [j.module for j in finished if j.returncode != 0 and j.returncode not in STOPPED]
    stopped = [j for j in finished if j.returncode in STOPPED]
    print(f"ran {len(finished)} papers; failed: {', '.join(failed) or 'none'}", flush=True)
    for job in stopped:
        run_dir = job.run_dir(out)
        if run_dir is not None:
            print(f"  resume {job.module}: iclr26 run {job.module} --resume {run_dir}")
    if waiting:
        print(f"  not started: {', '.join(j.module for j in waiting)}")
    if interrupted or stopped:
        return 130
    return 1 if failed else 0
