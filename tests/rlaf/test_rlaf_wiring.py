"""What the paper changes reaches the solver: learned guidance alters the search, the unguided arm does not get it,
the control keeps the values but not their assignment; and the drop-in refuses bad arguments by name."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26.rlaf import Guidance, RLAFPolicy, guided_solve, random_3sat, shuffled_guidance, solve


def _moved_policy(seed: int) -> RLAFPolicy:
    """A policy whose last layer is no longer zero (as after training): its mode varies over the variables."""
    torch.manual_seed(seed)
    policy = RLAFPolicy(channels=16, num_layers=2)
    with torch.no_grad():
        policy.head[-1].weight.normal_(0.0, 0.5)
    return policy


def test_a_moved_policy_changes_the_search_and_the_unguided_arm_gets_no_guidance():
    policy = _moved_policy(0)
    cnfs = [random_3sat(50, seed=s) for s in range(6)]
    guided = [guided_solve(c, policy, solver="cdcl") for c in cnfs]
    unguided = [guided_solve(c, None, solver="cdcl") for c in cnfs]
    assert all(g.result.injection == ("activity", "bump", "phase") for g in guided)
    assert all(u.guidance is None and u.result.injection == () for u in unguided)
    assert all(u.result.decisions == solve(c, solver="cdcl").decisions for u, c in zip(unguided, cnfs, strict=True))
    changed = [g.result.decisions != u.result.decisions for g, u in zip(guided, unguided, strict=True)]
    assert sum(changed) >= 4, changed  # the guidance_acts gate's premise: a moved policy changes most searches
    assert all(g.guidance.weight.std() > 0 for g in guided)


def test_the_shuffled_control_keeps_the_values_and_moves_them_between_variables():
    guidance = _moved_policy(1).guidance([random_3sat(40, seed=3)])[0]
    control = shuffled_guidance(guidance, seed=7)
    np.testing.assert_array_equal(np.sort(control.weight), np.sort(guidance.weight))
    assert control.polarity.sum() == guidance.polarity.sum()
    assert not np.array_equal(control.weight, guidance.weight)
    # one permutation moves each variable's (weight, polarity) pair together: with mixed polarities (the moved
    # policy above gives one polarity to all) and distinct weights, the pairs survive as a multiset
    mixed = Guidance(polarity=np.arange(40) % 3 == 0, weight=1.0 + 0.01 * np.arange(40))
    shuffled = shuffled_guidance(mixed, seed=7)
    assert not np.array_equal(shuffled.polarity, mixed.polarity)
    pairs = sorted(zip(mixed.weight.tolist(), mixed.polarity.tolist(), strict=True))
    assert sorted(zip(shuffled.weight.tolist(), shuffled.polarity.tolist(), strict=True)) == pairs
    again = shuffled_guidance(guidance, seed=7)
    np.testing.assert_array_equal(again.weight, control.weight)  # deterministic under the seed
    np.testing.assert_array_equal(again.polarity, control.polarity)


def test_guided_solve_names_a_bad_argument():
    cnf = random_3sat(20, seed=0)
    with pytest.raises(TypeError, match=r"guided_solve: policy must be an RLAFPolicy.*got int 42"):
        guided_solve(cnf, 42)
    with pytest.raises(TypeError, match=r"guided_solve: cnf must be a CNF"):
        guided_solve("formula.cnf", None)


def test_policy_load_names_a_file_that_is_not_a_policy(tmp_path):
    junk = tmp_path / "junk.pt"
    junk.write_bytes(bytes((i * 197 + 89) % 256 for i in range(4096)))
    with pytest.raises(ValueError, match=r"junk\.pt cannot be read as a torch file .*RLAFPolicy\.save"):
        RLAFPolicy.load(junk)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.pt cannot be read"):
        RLAFPolicy.load(empty)
    with pytest.raises(FileNotFoundError, match=r"missing\.pt is not a file"):
        RLAFPolicy.load(tmp_path / "missing.pt")
    with pytest.raises(ValueError, match=r"junk\.pt"):
        guided_solve(random_3sat(20, seed=0), junk)
    damaged = tmp_path / "damaged.pt"
    torch.save({"kind": "rlaf_policy", "channels": 8}, damaged)
    with pytest.raises(ValueError, match=r"damaged\.pt is a damaged RLAF policy file"):
        RLAFPolicy.load(damaged)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sigma": math.nan}, "sigma must be a finite number > 0"),
        ({"sigma": math.inf}, "sigma must be a finite number > 0"),
        ({"sigma": 0.0}, "sigma must be a finite number > 0"),
        ({"channels": 0}, "channels must be >= 1, got 0"),
        ({"num_layers": 2.5}, "num_layers must be an integer, got float 2.5"),
    ],
)
def test_policy_refuses_bad_hyperparameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RLAFPolicy(**kwargs)
