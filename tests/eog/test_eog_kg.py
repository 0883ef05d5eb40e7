"""Invariants of the synthetic KG and its splits: gold paths exist, OOD compositions never reach the SFT data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from iclr26.eog.data import make_trace
from iclr26.eog.kg import RELATIONS, bigrams, compositions, make_kg, make_question, make_task
from iclr26.eog.rewards import eog_reward, extract_triples


@pytest.fixture(scope="module")
def task():
    return make_task(3, n_sft=120, n_rl=120, n_test=40)


def test_compositions_are_type_valid_chains():
    chains = compositions(3)
    tail = {r.name: r.tail for r in RELATIONS}
    head = {r.name: r.head for r in RELATIONS}
    assert {c[0] for c in chains if len(c) == 1} == {r.name for r in RELATIONS}
    for c in chains:
        assert all(tail[a] == head[b] for a, b in itertools.pairwise(c)), c
    assert len(set(chains)) == len(chains) and max(len(c) for c in chains) == 3


def test_kg_names_are_not_substrings_of_each_other():
    g = make_kg(0)
    names = list(g.nodes)
    assert all(len(n) == 3 for n in names)  # prefix + 2 digits: containment (official Hits@1) is equality
    assert all(g.nodes[n]["type"] for n in names)


def test_every_gold_path_exists_and_ends_at_the_answers(task):
    for e in task.sft + task.rl + task.test_id + task.test_ood:
        gold = e.gold_triples
        assert gold and set(gold) <= set(e.graph), e.qid  # every gold triple is in the prompt's subgraph
        # walking the composition from the start entity through the graph gives exactly the gold path and answers
        frontier, walked = {e.q_entity[0]}, set()
        for rel in e.composition:
            hop = {(s, r, o) for s, r, o in e.graph if s in frontier and r == rel}
            walked |= hop
            frontier = {o for _, _, o in hop}
        assert walked == set(gold) and frontier == set(e.answers), e.qid
        # and the gold trace scores F1 = path = 1
        r = eog_reward(make_trace(e), list(e.answers), e.path_as_lists())
        assert (r.f1, r.path) == (1.0, 1.0)


def test_gold_triples_are_edges_of_the_kg():
    g = make_kg(5)
    rng = np.random.default_rng(0)
    person = "p07"
    e = make_question(g, person, ("works_at", "hq_in", "in_country"), rng, qid="x")
    edges = {(s, k, o) for s, o, k in g.edges(keys=True)}
    assert set(e.gold_triples) <= edges and set(e.graph) <= edges
    assert len(e.graph) == 12
    with pytest.raises(ValueError, match="starts at type company"):
        make_question(g, person, ("hq_in",), rng, qid="y")


def test_ood_compositions_never_reach_the_sft_data(task):
    held = set(task.ood_bigrams)
    assert held and all(bigrams(c) & held for c in task.ood_compositions)
    assert not any(bigrams(c) & held for c in task.id_compositions)
    rng = np.random.default_rng(0)
    for e in task.sft:
        trace = make_trace(e, rng, cite_prob=1.0, detour_prob=1.0)
        relations = [r for s, r, o in extract_triples(trace) if (s, r, o) in set(e.gold_triples)]
        assert not bigrams(relations) & held  # no SFT trace ever follows r_a by r_b
    assert all(e.composition in task.ood_compositions for e in task.test_ood)
    assert any(e.composition in task.ood_compositions for e in task.rl)  # RL sees OOD questions (no traces)
    # every relation still appears in the SFT data
    assert {r for e in task.sft for r in e.composition} == {r.name for r in RELATIONS}


def test_test_pairs_are_disjoint_from_training_pairs(task):
    def pairs(xs):
        return {(e.q_entity[0], e.composition) for e in xs}

    train = pairs(task.sft) | pairs(task.rl)
    assert not (pairs(task.test_id) | pairs(task.test_ood)) & train
    assert len(task.test_id) == len(task.test_ood) == 40


def test_task_is_deterministic_and_checks_its_size():
    a, b = make_task(1, n_sft=20, n_rl=20, n_test=10), make_task(1, n_sft=20, n_rl=20, n_test=10)
    assert a.sft == b.sft and a.test_ood == b.test_ood and a.ood_bigrams == b.ood_bigrams
    with pytest.raises(ValueError, match="lower n_sft"):
        make_task(1, n_sft=10_000)
