"""The benchmarks' clock: this thread's CPU time or the wall clock, never the CPU clock for work on a GPU."""

from __future__ import annotations

import argparse
import time

import pytest
import torch

from iclr26.common.clock import add_clock_argument, clock_for


def test_clock_names_and_the_default():
    parser = argparse.ArgumentParser()
    add_clock_argument(parser)
    assert parser.parse_args([]).clock == "cpu"
    assert clock_for("cpu", torch.device("cpu")) is time.thread_time
    assert clock_for("wall", torch.device("cuda")) is time.perf_counter
    with pytest.raises(SystemExit):
        parser.parse_args(["--clock", "sundial"])


def test_the_cpu_clock_does_not_count_sleeping():
    cpu = clock_for("cpu", torch.device("cpu"))
    start = cpu()
    time.sleep(0.2)
    assert cpu() - start < 0.1  # the sleep is wall time only


def test_the_cpu_clock_is_refused_for_gpu_work():
    with pytest.raises(ValueError, match="--clock cpu .* use --clock wall"):
        clock_for("cpu", torch.device("cuda", 0))
