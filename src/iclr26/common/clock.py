"""The clock a benchmark times with: ``--clock cpu`` (this thread's CPU time) or ``--clock wall``.

On one torch thread, the CPU time of the calling thread (``time.thread_time``) counts the work and not the waiting,
so other jobs on a loaded machine inflate it far less than the wall time (``time.perf_counter``). Work on a GPU is
not CPU time of this thread, so a CUDA benchmark times with the wall clock (after a synchronise).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.thread_time, "wall": time.perf_counter}


def add_clock_argument(parser: argparse.ArgumentParser, default: str = "cpu") -> None:
    """Add ``--clock {cpu,wall}`` to a benchmark's ``parser``."""
    parser.add_argument(
        "--clock",
        choices=tuple(CLOCKS),
        default=default,
        help="cpu: this thread's CPU time (one thread: the waiting of a loaded machine left out); wall: perf_counter",
    )


def clock_for(name: str, device: torch.device) -> Callable[[], float]:
    """The clock function named ``name`` for work on ``device``.

    Raises:
        ValueError: naming ``--clock``, for the CPU clock with work on a GPU (whose time is not this thread's).
    """
    if name not in CLOCKS:
        raise ValueError(f"--clock must be one of {tuple(CLOCKS)}, got {name!r}")
    if name == "cpu" and device.type != "cpu":
        raise ValueError(f"--clock cpu times this thread's CPU time, not work on {device}; use --clock wall there")
    return CLOCKS[name]


__all__ = ["CLOCKS", "add_clock_argument", "clock_for"]
