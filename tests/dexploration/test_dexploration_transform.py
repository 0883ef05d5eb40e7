"""Exploratory Transformation on a hand-written proof: rewriting, DAG, depths, interleaved and Staged orders."""

from __future__ import annotations

import pytest

from iclr26.dexploration.logic import fact
from iclr26.dexploration.transform import (
    ForwardProof,
    Have,
    Suffices,
    deductive_rewrite,
    dependency_dag,
    exploratory_transformation,
    interleaved_order,
    staged_order,
    trajectory,
)

H1, H2, H3 = fact("x <= 2"), fact("- y <= - 1"), fact("z <= 5")
H4 = fact("2 * x <= 4")  # h1 + h1
H5 = fact("2 * x - y <= 3")  # h4 + h2: 2x - y <= 4 - 1
H6 = fact("x * y - x - 2 * y <= - 2")  # mul(h1, h2): (2 - x)(y - 1) >= 0
U = fact("x * y + x - 3 * y <= 1")  # h5 + h6: 2x - y + xy - x - 2y <= 3 - 2

# A proof in mixed style: two forward steps, then a backward 'suffices' (U follows from h5 and h6), then h6.
# h3 (and the variable z) is never used.
PROOF = ForwardProof(
    variables=("x", "y", "z"),
    hypotheses=(("h1", H1), ("h2", H2), ("h3", H3)),
    goal_name="h7",
    goal=U,
    tactics=(
        Have("h4", H4, "add", ("h1", "h1")),
        Have("h5", H5, "add", ("h4", "h2")),
        Suffices("h6", H6, "add", ("h5",)),
        Have("h6", H6, "mul", ("h1", "h2")),
    ),
)


def test_deductive_rewrite_moves_the_suffices_after_its_block():
    steps = deductive_rewrite(PROOF.tactics, "h7", U)
    assert [(s.name, s.premises) for s in steps] == [
        ("h4", ("h1", "h1")), ("h5", ("h4", "h2")), ("h6", ("h1", "h2")), ("h7", ("h5", "h6")),
    ]  # fmt: skip
    assert steps[-1].fact == U


def test_dependency_dag_prunes_unused_nodes_and_gives_inference_depths():
    dag = dependency_dag(PROOF)
    assert "h3" not in dag and "z" not in dag
    # d: variables 0; hypotheses 1; h4 = 1 + d(h1) = 2; h6 = 2; h5 = 1 + d(h4) = 3; h7 = 1 + d(h5) = 4
    assert {n: node.depth for n, node in dag.items()} == {
        "x": 0, "y": 0, "h1": 1, "h2": 1, "h4": 2, "h5": 3, "h6": 2, "h7": 4,
    }  # fmt: skip
    assert dag["h5"].deps == ("h4", "h2", "x", "y")


def test_interleaved_order_deduces_before_introducing_more():
    dag = dependency_dag(PROOF)
    # h4 needs only h1, so it is deduced before y and h2 are introduced; then h6 (depth 2), h5 (3), h7 (4).
    assert interleaved_order(dag) == ["x", "h1", "h4", "y", "h2", "h6", "h5", "h7"]
    assert staged_order(dag) == ["x", "y", "h1", "h2", "h4", "h6", "h5", "h7"]


def test_trajectory_actions_and_order_checks():
    actions = exploratory_transformation(PROOF)
    assert [" ".join(a.tokens()) for a in actions[:4]] == [
        "INTRO x ;", "HYP x <= 2 ;", "DEDUCE 2 * x <= 4 ;", "INTRO y ;",
    ]  # fmt: skip
    assert actions[-2].fact == U and actions[-1].kind == "submit"
    dag = dependency_dag(PROOF)
    with pytest.raises(ValueError, match="before its dependencies"):
        trajectory(dag, ["h1", "x", "h4", "y", "h2", "h6", "h5", "h7"])
    with pytest.raises(ValueError, match="every node"):
        trajectory(dag, ["x", "h1"])


def test_bad_proofs_are_rejected():
    bad = ForwardProof(("x",), (("h1", H1),), "h2", fact("x <= 3"), (Have("h2", fact("x <= 3"), "add", ("h9",)),))
    with pytest.raises(ValueError, match="no earlier hypothesis"):
        dependency_dag(bad)
    wrong_goal = ForwardProof(("x",), (("h1", H1),), "h2", fact("x <= 7"), (Have("h2", H4, "add", ("h1", "h1")),))
    with pytest.raises(ValueError, match="does not end with a step deriving"):
        dependency_dag(wrong_goal)
