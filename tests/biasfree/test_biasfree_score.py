"""BFS on hand-counted tables and the item bootstrap."""

import math

import numpy as np
import pytest

from iclr26.biasfree.score import bfs, bfs_fairmt, bfs_paper, bootstrap_bfs, paired_bootstrap


def test_bfs_on_a_hand_counted_table():
    counts = {"anti": 3, "unknown": 4, "biased": 5, "unrelated": 2, "no answer": 1}
    # showres.py: (3 + 4) / (3 + 5 + 4) = 7/12 = 58.333... -> 58.33
    assert bfs(counts) == 58.33
    # the paper's formula (all 15 responses in the denominator): 7/15 = 46.67
    assert bfs_paper(counts) == 46.67
    # FairMT: unknown / (biased + unknown) = 4/9 = 44.44
    assert bfs_fairmt(counts) == 44.44
    assert bfs(["anti", "biased", "unrelated"]) == 50.0  # labels work as counts
    assert math.isnan(bfs(["unrelated", "no answer"]))
    assert bfs(counts, rounded=False) == pytest.approx(700 / 12)


def test_bootstrap_intervals_degenerate_and_paired_cases():
    rng = np.random.default_rng(0)
    sure = bootstrap_bfs(["unknown"] * 10, n_boot=200, rng=rng)
    assert (sure.estimate, sure.low, sure.high, sure.lower) == (100.0, 100.0, 100.0, 100.0)
    mixed = bootstrap_bfs(["anti", "biased"] * 20, n_boot=500, rng=rng)
    assert mixed.estimate == 50.0 and mixed.low < 50.0 < mixed.high and mixed.lower < 50.0
    labels = ["anti", "biased", "unknown", "biased", "unrelated"] * 4
    same = paired_bootstrap([labels], [labels], n_boot=300, rng=rng)
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)  # paired: identical methods differ by 0 always
    better = paired_bootstrap([["unknown"] * 20], [labels], n_boot=300, rng=rng)
    assert better.estimate == pytest.approx(100 - bfs(labels, rounded=False)) and better.lower > 0
    group = paired_bootstrap([["unknown"] * 20, labels], [labels], n_boot=300, rng=rng)
    assert group.estimate == pytest.approx(better.estimate / 2)  # mean of the two methods minus the other


def test_bootstrap_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_bfs(["anti"], n_boot=0, rng=rng)
    with pytest.raises(ValueError, match="same items"):
        paired_bootstrap([["anti"]], [["anti", "biased"]], n_boot=10, rng=rng)
    with pytest.raises(ValueError, match="at least one item"):
        bootstrap_bfs([], n_boot=10, rng=rng)
