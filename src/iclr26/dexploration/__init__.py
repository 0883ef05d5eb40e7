"""DExploration (ICLR 2026, OpenReview Njrkeo3DiJ): problem synthesis as verified step-by-step deductive exploration.

The environment (:class:`ExplorationEnv`: introduce, deduce, submit, with an explosion check) over a verification
:class:`Kernel` (z3 here), certificates re-checked by Coq (:class:`CoqCertifier`), Exploratory Transformation
(:func:`exploratory_transformation`), and the difficulty measure (bare-statement provers).
"""

from iclr26.dexploration.coq import Certifier, CoqCertifier, CoqNotFound, bare_coq, coq_file, coq_theorem, run_coqc
from iclr26.dexploration.env import Action, Entry, ExplorationEnv, MalformedAction, Statement, parse_action
from iclr26.dexploration.kernel import Entailment, Kernel, Z3Kernel
from iclr26.dexploration.logic import Fact, ParseError, fact, parse_fact, rule_add, rule_mul
from iclr26.dexploration.prover import bounded_prove, z3_pass_at_k
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

__all__ = [
    "Action",
    "Certifier",
    "CoqCertifier",
    "CoqNotFound",
    "Entailment",
    "Entry",
    "ExplorationEnv",
    "Fact",
    "ForwardProof",
    "Have",
    "Kernel",
    "MalformedAction",
    "ParseError",
    "Statement",
    "Suffices",
    "Z3Kernel",
    "bare_coq",
    "bounded_prove",
    "coq_file",
    "coq_theorem",
    "deductive_rewrite",
    "dependency_dag",
    "exploratory_transformation",
    "fact",
    "interleaved_order",
    "parse_action",
    "parse_fact",
    "rule_add",
    "rule_mul",
    "run_coqc",
    "staged_order",
    "trajectory",
    "z3_pass_at_k",
]
