"""A corpus of forward proofs, generated here, and its JSONL file format (the reproduction's ``data`` key).

A proof starts from a random integer witness point, so the hypotheses (linear bounds and equations true at the
point) are satisfiable by construction. Steps apply the two rules of :mod:`iclr26.dexploration.logic` (sum of two
facts, difference with an equation, product of two upper bounds) to earlier facts, preferring the latest step so
that proofs chain; the last step is the conclusion U. With probability ``backward_prob`` the proof is written in
backward style: the last step becomes ``suffices`` the step before it (the non-deductive tactic that
Exploratory Transformation rewrites away).

File format (one JSON object per line)::

    {"variables": ["x", "y"],
     "hypotheses": [["h1", "x <= 2"], ["h2", "- y <= - 1"]],
     "goal": ["h4", "- x * y + 2 * y + x <= 2"],
     "proof": [{"tactic": "have", "name": "h3", "fact": "...", "rule": "add", "premises": ["h1", "h2"]},
               {"tactic": "suffices", "name": "...", ...}, ...]}

Facts are written in the token language of :class:`~iclr26.dexploration.logic.Fact` (tokens separated by spaces).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from iclr26.dexploration.kernel import Z3Kernel
from iclr26.dexploration.logic import VARIABLES, Fact, ParseError, fact, poly, rule_add, rule_mul
from iclr26.dexploration.transform import ForwardProof, Have, Suffices, deductive_rewrite, dependency_dag

RULES = {"add", "sub", "mul"}


def _apply(rule: str, a: Fact, b: Fact) -> Fact:
    if rule == "add":
        return rule_add(a, b)
    if rule == "sub":
        return rule_add(a, b, scale=-1)
    return rule_mul(a, b)


def random_proof(
    rng: np.random.Generator,
    *,
    max_vars: int = 3,
    max_hyps: int = 3,
    max_steps: int = 3,
    max_degree: int = 2,
    max_terms: int = 5,
    max_coef: int = 3,
    backward_prob: float = 0.3,
) -> ForwardProof:
    """One random forward proof (module docstring).

    Args:
        rng: the random source.
        max_vars: at most this many variables (at least 2).
        max_hyps: at most this many hypotheses (at least 2).
        max_steps: at most this many steps (at least 2).
        max_degree: largest total degree of a derived fact.
        max_terms: most monomials of a derived fact.
        max_coef: largest absolute coefficient of a hypothesis.
        backward_prob: probability of writing the last step in backward (``suffices``) style.
    """
    for _ in range(1000):
        proof = _try_proof(rng, max_vars, max_hyps, max_steps, max_degree, max_terms, max_coef, backward_prob)
        if proof is not None:
            return proof
    raise RuntimeError("could not generate a proof with these limits; loosen max_terms or max_degree")


def _try_proof(rng, max_vars, max_hyps, max_steps, max_degree, max_terms, max_coef, backward_prob):  # noqa: ANN001, ANN202
    n_vars = int(rng.integers(2, max_vars + 1))
    names = VARIABLES[:n_vars]
    point = {v: int(rng.integers(-3, 4)) for v in names}
    hyps: list[tuple[str, Fact]] = []
    for i in range(int(rng.integers(2, max_hyps + 1))):
        k = int(rng.integers(1, min(2, n_vars) + 1))
        chosen = sorted(rng.choice(n_vars, size=k, replace=False).tolist())
        coefs = [int(rng.choice([c for c in range(-max_coef, max_coef + 1) if c])) for _ in chosen]
        lhs = poly({(names[j],): c for j, c in zip(chosen, coefs, strict=True)})
        value = sum(c * point[names[j]] for j, c in zip(chosen, coefs, strict=True))
        if rng.random() < 0.2:
            hyps.append((f"h{i + 1}", Fact(lhs, "=", value)))
        else:
            hyps.append((f"h{i + 1}", Fact(lhs, "<=", value + int(rng.integers(0, 3)))))
    facts: list[tuple[str, Fact]] = list(hyps)
    steps: list[Have] = []
    for _ in range(int(rng.integers(2, max_steps + 1))):
        made = None
        for _attempt in range(30):
            a_i = len(facts) - 1 if steps and rng.random() < 0.7 else int(rng.integers(0, len(facts)))
            b_i = int(rng.integers(0, len(facts)))
            if a_i == b_i:
                continue
            (na, a), (nb, b) = facts[a_i], facts[b_i]
            options = ["add"]
            if b.rel == "=":
                options.append("sub")
            if a.rel == "<=" and b.rel == "<=" and a.degree + b.degree <= max_degree:
                options += ["mul", "mul"]
            rule = str(rng.choice(options))
            f = _apply(rule, a, b)
            if not f.lhs or len(f.lhs) > max_terms or any(abs(c) > 99 for _, c in f.lhs) or abs(f.rhs) > 999:
                continue
            if f.degree > max_degree or any(f == g for _, g in facts):
                continue
            made = Have(f"h{len(facts) + 1}", f, rule, (na, nb))
            break
        if made is None:
            return None
        steps.append(made)
        facts.append((made.name, made.fact))
    goal = steps[-1]
    used_vars = set().union(*(f.variables for _, f in hyps))
    variables = tuple(v for v in names if v in used_vars)
    tactics: tuple[Have | Suffices, ...] = tuple(steps)
    prev = steps[-2] if len(steps) > 1 else None
    if prev is not None and prev.name in goal.premises and rng.random() < backward_prob:
        others = tuple(p for p in goal.premises if p != prev.name)
        earlier = {n for n, _ in hyps} | {s.name for s in steps[:-2]}
        if set(others) <= earlier:
            tactics = (*steps[:-2], Suffices(prev.name, prev.fact, goal.rule, others), prev)
    return ForwardProof(variables, tuple(hyps), goal.name, goal.fact, tactics)


def proof_to_json(proof: ForwardProof) -> dict[str, Any]:
    """The JSON object of one proof (module docstring)."""
    return {
        "variables": list(proof.variables),
        "hypotheses": [[n, f.text()] for n, f in proof.hypotheses],
        "goal": [proof.goal_name, proof.goal.text()],
        "proof": [
            {"tactic": "have" if isinstance(t, Have) else "suffices", "name": t.name, "fact": t.fact.text(),
             "rule": t.rule, "premises": list(t.premises)}
            for t in proof.tactics
        ],
    }  # fmt: skip


def proof_from_json(obj: Any, *, where: str = "proof") -> ForwardProof:
    """Parse one JSON object (module docstring) into a :class:`ForwardProof`, checking its structure.

    Raises:
        ValueError: naming ``where`` and the offending field.
    """
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for key in ("variables", "hypotheses", "goal", "proof"):
        if key not in obj:
            raise ValueError(f"{where}: missing field {key!r}")
    try:
        variables = tuple(obj["variables"])
        bad = [v for v in variables if v not in VARIABLES]
        if bad or len(set(variables)) != len(variables):
            raise ValueError(f"field 'variables': need distinct names from {VARIABLES}, got {list(variables)}")
        hyps = tuple((str(n), fact(str(t))) for n, t in obj["hypotheses"])
        goal_name, goal_text = obj["goal"]
        tactics: list[Have | Suffices] = []
        for t in obj["proof"]:
            kind = {"have": Have, "suffices": Suffices}.get(t.get("tactic"))
            if kind is None:
                raise ValueError(f"field 'proof': tactic must be 'have' or 'suffices', got {t.get('tactic')!r}")
            if t.get("rule") not in RULES:
                raise ValueError(f"field 'proof': rule must be one of {sorted(RULES)}, got {t.get('rule')!r}")
            tactics.append(kind(str(t["name"]), fact(str(t["fact"])), str(t["rule"]), tuple(map(str, t["premises"]))))
        proof = ForwardProof(variables, hyps, str(goal_name), fact(str(goal_text)), tuple(tactics))
        dependency_dag(proof)
    except ParseError as err:
        raise ValueError(f"{where}: a fact does not parse: {err}") from None
    except (TypeError, KeyError) as err:
        raise ValueError(f"{where}: malformed field ({err})") from None
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    return proof


def check_proof(proof: ForwardProof, kernel: Z3Kernel) -> None:
    """Check with ``kernel`` that Γ is satisfiable and every rewritten step follows from its premises.

    Raises:
        ValueError: naming the first step that does not follow, or the explosion.
    """
    if kernel.satisfiable([f for _, f in proof.hypotheses]) is not True:
        raise ValueError("the hypotheses are unsatisfiable (explosion) or undecided")
    known = dict(proof.hypotheses)
    for s in deductive_rewrite(proof.tactics, proof.goal_name, proof.goal):
        if kernel.entails([known[p] for p in s.premises], s.fact).proved is not True:
            raise ValueError(f"step {s.name} ({s.fact.text()}) does not follow from {list(s.premises)}")
        known[s.name] = s.fact


def load_jsonl(path: Path, *, kernel: Z3Kernel | None = None) -> list[ForwardProof]:
    """Read a corpus file (module docstring); with ``kernel``, check every proof (:func:`check_proof`).

    Raises:
        ValueError: for an unreadable, empty or malformed file, naming the line.
    """
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read {path}: {err}") from None
    proofs = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} line {i}: not JSON ({err.msg})") from None
        proof = proof_from_json(obj, where=f"{path} line {i}")
        if kernel is not None:
            try:
                check_proof(proof, kernel)
            except ValueError as err:
                raise ValueError(f"{path} line {i}: {err}") from None
        proofs.append(proof)
    if not proofs:
        raise ValueError(f"{path} holds no proofs")
    return proofs


def save_jsonl(proofs: list[ForwardProof], path: Path) -> None:
    """Write ``proofs`` in the corpus format."""
    Path(path).write_text("".join(json.dumps(proof_to_json(p)) + "\n" for p in proofs))
