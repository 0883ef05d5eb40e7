"""Exploratory Transformation: from a statement–proof pair (Γ ⊢ U, [s_i]) to an exploration trajectory.

The paper distils its training data from theorem-proving data in three steps, implemented here for the proofs of
:mod:`iclr26.dexploration.corpus`:

1. **Deductive rewriting** (:func:`deductive_rewrite`). A proof is a list of tactics: ``Have`` (forward: derive a
   fact from earlier ones; deductive) and ``Suffices`` (backward: "U follows from F by this rule, so prove F next";
   it changes the goal, so it is not deductive). The tactics before the first non-deductive one are kept; the rest
   (which prove F) are rewritten recursively into a block of ``Have`` steps, followed by the ``Have`` that derives
   the old goal from F — the paper's "wrap the rest in a ``have`` block".
2. **Dependency analysis** (:func:`dependency_dag`). Nodes: variables, hypotheses and steps; an edge a → b means b
   uses a (a hypothesis uses the variables it mentions; a step its premises and the variables it mentions). Steps
   and hypotheses that the conclusion does not depend on are dropped (the statement stays provable). The inference
   depth d is the topological level: variables 0, a hypothesis 1 + its deepest variable, a step 1 + its deepest
   dependency.
3. **Exploratory reassembling** (:func:`interleaved_order`). Steps are taken by increasing (d, index); before each
   step, the variables and hypotheses it still lacks are introduced (each hypothesis right after its variables), so
   the agent deduces as much as it can before introducing new hypotheses. :func:`staged_order` is the paper's
   Staged ablation: every variable, then every hypothesis, then every step.

A trajectory is the action list INTRO/HYP/DEDUCE in that order, then SUBMIT (the conclusion is the last step).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from iclr26.dexploration.env import Action
from iclr26.dexploration.logic import Fact


@dataclass(frozen=True)
class Have:
    """Forward tactic ``have name : fact := rule premises``."""

    name: str
    fact: Fact
    rule: str
    premises: tuple[str, ...]


@dataclass(frozen=True)
class Suffices:
    """Backward tactic ``suffices name : fact by rule (premises + [name])``: the goal follows from ``fact`` and
    ``premises`` by ``rule``; the tactics after it prove ``fact``."""

    name: str
    fact: Fact
    rule: str
    premises: tuple[str, ...]


Tactic = Have | Suffices


@dataclass(frozen=True)
class ForwardProof:
    """A statement Γ ⊢ U with a proof.

    Attributes:
        variables: Γ's variables, in order.
        hypotheses: Γ's hypotheses as (name, fact), in order.
        goal_name: the name of the conclusion's step.
        goal: U.
        tactics: the proof.
    """

    variables: tuple[str, ...]
    hypotheses: tuple[tuple[str, Fact], ...]
    goal_name: str
    goal: Fact
    tactics: tuple[Tactic, ...]


def deductive_rewrite(tactics: Sequence[Tactic], goal_name: str, goal: Fact) -> list[Have]:
    """Step 1: rewrite ``tactics`` (which prove ``goal``) into ``Have`` steps only; the last one derives ``goal``.

    Raises:
        ValueError: if a forward proof does not end with a step deriving ``goal``.
    """
    for i, t in enumerate(tactics):
        if isinstance(t, Suffices):
            head = [s for s in tactics[:i] if isinstance(s, Have)]
            block = deductive_rewrite(tactics[i + 1 :], t.name, t.fact)
            # deductive rewriting: the forward prefix, the rest as a have block proving F, then U from F
            return [*head, *block, Have(goal_name, goal, t.rule, (*t.premises, t.name))]
    haves = [t for t in tactics if isinstance(t, Have)]
    if not haves or haves[-1].fact != goal:
        raise ValueError(f"the proof of {goal_name} does not end with a step deriving {goal.text()}")
    if haves[-1].name != goal_name:
        last = haves[-1]
        haves[-1] = Have(goal_name, last.fact, last.rule, last.premises)
    return haves


NodeKind = Literal["var", "hyp", "step"]


@dataclass(frozen=True)
class Node:
    """A node of the dependency DAG.

    Attributes:
        kind: var, hyp or step.
        name: the variable or fact name.
        index: position among the nodes of its kind in the proof (ties in the orders are broken by it).
        fact: the fact (None for a variable).
        deps: names of the nodes it uses.
        depth: inference depth d (module docstring, step 2).
    """

    kind: NodeKind
    name: str
    index: int
    fact: Fact | None
    deps: tuple[str, ...]
    depth: int


def dependency_dag(proof: ForwardProof) -> dict[str, Node]:
    """Steps 1–2: the deductive rewriting of ``proof`` and its dependency DAG, pruned to the ancestors of U.

    Returns:
        name -> :class:`Node`, in a topological order (variables, hypotheses, steps).

    Raises:
        ValueError: for a premise that names no earlier hypothesis or step, or an unknown variable.
    """
    steps = deductive_rewrite(proof.tactics, proof.goal_name, proof.goal)
    known_vars = set(proof.variables)
    raw: dict[str, tuple[NodeKind, int, Fact | None, tuple[str, ...]]] = {}
    for i, v in enumerate(proof.variables):
        raw[v] = ("var", i, None, ())
    for i, (name, f) in enumerate(proof.hypotheses):
        if not f.variables <= known_vars:
            raise ValueError(f"hypothesis {name} uses undeclared variables {sorted(f.variables - known_vars)}")
        raw[name] = ("hyp", i, f, tuple(sorted(f.variables, key=proof.variables.index)))
    for i, s in enumerate(steps):
        for p in s.premises:
            if p not in raw or raw[p][0] == "var":
                raise ValueError(f"step {s.name} uses {p!r}, which is no earlier hypothesis or step")
        if not s.fact.variables <= known_vars:
            raise ValueError(f"step {s.name} uses undeclared variables {sorted(s.fact.variables - known_vars)}")
        own_vars = tuple(v for v in proof.variables if v in s.fact.variables)
        raw[s.name] = ("step", i, s.fact, tuple(dict.fromkeys((*s.premises, *own_vars))))
    # Prune to the ancestors of U.
    keep = {proof.goal_name}
    for name in reversed(list(raw)):
        if name in keep:
            keep.update(raw[name][3])
    depth: dict[str, int] = {}
    out: dict[str, Node] = {}
    for name, (kind, idx, f, deps) in raw.items():
        if name not in keep:
            continue
        # d(v) = 0 for a variable; otherwise 1 + the deepest dependency.
        depth[name] = 0 if kind == "var" else 1 + max((depth[d] for d in deps), default=0)
        out[name] = Node(kind, name, idx, f, deps, depth[name])
    return out


def _ancestors_first(dag: dict[str, Node], name: str, placed: set[str], order: list[str]) -> None:
    for d in dag[name].deps:
        if d not in placed:
            _ancestors_first(dag, d, placed, order)
    if name not in placed:
        placed.add(name)
        order.append(name)


def interleaved_order(dag: dict[str, Node]) -> list[str]:
    """Step 3: the exploratory (interleaved) order: steps by (d, index), each preceded by what it still lacks."""
    placed: set[str] = set()
    order: list[str] = []
    # exploratory reassembling: steps by increasing inference depth d(s), so the agent deduces all it can before
    # it introduces the next hypothesis (the paper's main source of gains over the Staged order)
    for s in sorted((n for n in dag.values() if n.kind == "step"), key=lambda n: (n.depth, n.index)):
        # Introduce the missing variables and hypotheses of s: hypotheses in their order, each after its
        # variables; then the variables only the step itself mentions.
        hyps = sorted(
            (dag[a] for a in _closure(dag, s.name) if dag[a].kind == "hyp" and a not in placed), key=lambda n: n.index
        )
        for h in hyps:
            _ancestors_first(dag, h.name, placed, order)
        _ancestors_first(dag, s.name, placed, order)
    return order


def _closure(dag: dict[str, Node], name: str) -> set[str]:
    seen: set[str] = set()
    stack = [name]
    while stack:
        n = stack.pop()
        for d in dag[n].deps:
            if d not in seen:
                seen.add(d)
                stack.append(d)
    return seen


def staged_order(dag: dict[str, Node]) -> list[str]:
    """The Staged ablation: all variables, all hypotheses (in order), then steps by (d, index)."""
    rank = {"var": 0, "hyp": 1, "step": 2}  # the Staged ablation: introduce everything first, then deduce
    key = {"var": lambda n: n.index, "hyp": lambda n: n.index, "step": lambda n: (n.depth, n.index)}
    return [
        n.name
        for n in sorted(dag.values(), key=lambda n: (rank[n.kind], key[n.kind](n)))  # type: ignore[operator]
    ]


def trajectory(dag: dict[str, Node], order: Sequence[str]) -> list[Action]:
    """The actions of ``order``: INTRO for a variable, HYP for a hypothesis, DEDUCE for a step, then SUBMIT.

    Raises:
        ValueError: if ``order`` is not a topological order of ``dag`` covering every node, or does not end on U.
    """
    seen: set[str] = set()
    actions: list[Action] = []
    if sorted(order) != sorted(dag):
        raise ValueError("the order must list every node of the DAG once")
    for name in order:
        node = dag[name]
        missing = [d for d in node.deps if d not in seen]
        if missing:
            raise ValueError(f"{name} comes before its dependencies {missing}")
        seen.add(name)
        if node.kind == "var":
            actions.append(Action("intro", var=name))
        else:
            actions.append(Action("hyp" if node.kind == "hyp" else "deduce", fact=node.fact))
    last = dag[order[-1]]
    if last.kind != "step" or max(n.depth for n in dag.values()) != last.depth:
        raise ValueError("the trajectory must end on the conclusion")
    actions.append(Action("submit"))
    return actions


def exploratory_transformation(proof: ForwardProof, *, staged: bool = False) -> list[Action]:
    """Steps 1–3 on one proof: the exploration trajectory (interleaved; ``staged=True`` for the ablation)."""
    dag = dependency_dag(proof)
    return trajectory(dag, staged_order(dag) if staged else interleaved_order(dag))
