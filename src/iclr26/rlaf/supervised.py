"""The expert-supervised baseline RLAF compares against: a GNN trained to predict a hand-crafted literal labelling.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053), its baselines, and the official ``train_supervised.py``,
``src/solving/{backbone,core}.py`` and ``src/policy/evaluate.py::var_params_from_target_prediction`` (read for
the facts, not copied). The same GNN trunk as the policy, with a per-literal logit head, is trained with binary
cross-entropy on one of two labellings (the NeuroBack / NeuroCore ideas):

- ``"backbone"`` (used for 3-SAT): a literal is positive if it is true in every model of a satisfiable formula;
  labels come from repeated solver calls under assumptions (only satisfiable training formulas are used);
- ``"core"`` (used for colouring): a literal is positive if its variable occurs in an unsatisfiable core; the core
  comes from PySAT's assumption-based ``get_core`` (satisfiable formulas get all-zero labels).

The prediction becomes a parameterisation with ``q_l = sigmoid(logit_l)``: ``w(x) = s·(q_x + q_¬x)/2`` with the
scale ``s = pred_scale`` (10 in the official evaluation); ``p(x) = [q_x > q_¬x]`` for the backbone, ``p(x) = 1`` for
the core.

Shape glossary: L literals (``2u`` positive, ``2u + 1`` negative of variable index ``u``); V variables; D channels.

Deviations: the official core labels are DRAT-trim cores of CaDiCaL proofs; PySAT's assumption core is a
(non-minimal) unsatisfiable core of the same kind, computed without external binaries. Weights are floored at
``1e-6`` so that a saturated sigmoid cannot produce ``w = 0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.gnn import LiteralClauseGNN
from iclr26.rlaf.graph import LiteralClauseGraph, build_graph
from iclr26.rlaf.guidance import Guidance

__all__ = ["LiteralPredictor", "Target", "backbone_labels", "core_labels", "train_supervised"]

Target = Literal["backbone", "core"]
_MIN_WEIGHT = 1e-6


def _lit_index(lit: int) -> int:
    return 2 * (abs(lit) - 1) + (lit < 0)


def backbone_labels(cnf: CNF) -> np.ndarray:
    """``(L,)`` float32: 1 on the backbone literals of a satisfiable formula, all 0 for an unsatisfiable one.

    A literal ``l`` of a model is in the backbone iff the formula with the assumption ``¬l`` is unsatisfiable.
    """
    from pysat.solvers import Solver

    labels = np.zeros(2 * cnf.num_vars, dtype=np.float32)
    with Solver(name="glucose4", bootstrap_with=[list(c) for c in cnf.clauses]) as solver:
        if not solver.solve():
            return labels
        model = {abs(lit): lit for lit in solver.get_model()}
        for v in range(1, cnf.num_vars + 1):
            lit = model.get(v, -v)
            # l is a backbone literal iff F ∧ ¬l is unsatisfiable
            if not solver.solve(assumptions=[-lit]):
                labels[_lit_index(lit)] = 1.0
    return labels


def core_labels(cnf: CNF) -> np.ndarray:
    """``(L,)`` float32: 1 on both literals of every variable in an unsatisfiable core; all 0 if satisfiable.

    Clause ``i`` gets a selector variable ``s_i``; solving under the assumptions ``s_1..s_C`` fails and PySAT's
    ``get_core`` names the selectors (so the clauses) of a core.
    """
    from pysat.solvers import Solver

    labels = np.zeros(2 * cnf.num_vars, dtype=np.float32)
    first = cnf.num_vars + 1
    selectors = list(range(first, first + cnf.num_clauses))
    with Solver(
        name="glucose4", bootstrap_with=[[*c, -s] for c, s in zip(cnf.clauses, selectors, strict=True)]
    ) as solver:
        if solver.solve(assumptions=selectors):
            return labels
        # the selectors in the failed assumptions name the clauses of an unsatisfiable core
        for s in solver.get_core() or []:
            for lit in cnf.clauses[s - first]:
                u = abs(lit) - 1
                labels[2 * u] = labels[2 * u + 1] = 1.0
    return labels


class LiteralPredictor(nn.Module):
    """The supervised baseline's network: the RLAF GNN trunk with a per-literal logit head.

    Args:
        channels: hidden width ``D``.
        num_layers: message-passing rounds.
        target: the labelling it predicts (decides how predictions become polarities).
        pred_scale: the weight scale ``s`` of the parameterisation (official evaluation: 10).
    """

    def __init__(
        self, *, channels: int = 64, num_layers: int = 4, target: Target = "backbone", pred_scale: float = 10.0
    ) -> None:
        super().__init__()
        if target not in ("backbone", "core"):
            raise ValueError(f"target must be 'backbone' or 'core', got {target!r}")
        if pred_scale <= 0:
            raise ValueError(f"pred_scale must be > 0, got {pred_scale}")
        self.target = target
        self.pred_scale = pred_scale
        self.gnn = LiteralClauseGNN(channels=channels, num_layers=num_layers)
        self.head = nn.Sequential(nn.Linear(channels, 2 * channels), nn.SiLU(), nn.Linear(2 * channels, 1))

    def forward(self, graph: LiteralClauseGraph) -> Tensor:
        """``(L,)`` literal logits."""
        return self.head(self.gnn(graph)).squeeze(1)

    @torch.no_grad()
    def guidance(self, cnfs: Sequence[CNF]) -> list[Guidance]:
        """The parameterisation of each formula derived from the predicted literal probabilities."""
        graph = build_graph(cnfs)
        was_training = self.training
        self.eval()
        q = torch.sigmoid(self(graph)).double().view(-1, 2)  # (V, 2): [q_x, q_¬x]
        self.train(was_training)
        # w(x) = s·(q_x + q_¬x)/2
        weight = (self.pred_scale * 0.5 * q.sum(dim=1)).clamp_min(_MIN_WEIGHT).numpy()
        # p(x) = [q_x > q_¬x] (backbone) or 1 (core)
        polarity = (q[:, 0] > q[:, 1]).numpy() if self.target == "backbone" else np.ones(len(weight), dtype=bool)
        out, start = [], 0
        for n in graph.num_vars:
            out.append(Guidance(polarity=polarity[start : start + n], weight=weight[start : start + n]))
            start += n
        return out


def train_supervised(
    model: LiteralPredictor,
    cnfs: Sequence[CNF],
    labels: Sequence[np.ndarray],
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    generator: torch.Generator,
) -> list[float]:
    """Fit ``model`` to literal labels with binary cross-entropy (Adam, gradient norm clipped at 1).

    Args:
        model: the predictor (updated in place).
        cnfs: training formulas.
        labels: ``(L_b,)`` labels per formula (:func:`backbone_labels` or :func:`core_labels`).
        epochs: passes over the data.
        batch_size: formulas per step.
        lr: Adam learning rate.
        generator: for the shuffling.

    Returns:
        The mean loss of each epoch.

    Raises:
        ValueError: if labels and formulas do not match.
    """
    if len(cnfs) != len(labels) or not cnfs:
        raise ValueError(f"need one label array per formula, got {len(cnfs)} formulas and {len(labels)} labels")
    for i, (cnf, lab) in enumerate(zip(cnfs, labels, strict=True)):
        if lab.shape != (2 * cnf.num_vars,):
            raise ValueError(f"labels[{i}] must have shape (2·num_vars,) = ({2 * cnf.num_vars},), got {lab.shape}")
    for name, value, ok in (("epochs", epochs, epochs >= 1), ("batch_size", batch_size, batch_size >= 1)):
        if not ok:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    batches = []
    for start in range(0, len(cnfs), batch_size):
        idx = list(range(start, min(start + batch_size, len(cnfs))))
        batches.append(
            (build_graph([cnfs[i] for i in idx]), torch.from_numpy(np.concatenate([labels[i] for i in idx])))
        )
    history = []
    model.train()
    for _ in range(epochs):
        losses = []
        for k in torch.randperm(len(batches), generator=generator).tolist():
            graph, target = batches[k]
            loss = F.binary_cross_entropy_with_logits(model(graph), target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(float(loss.detach()))
        history.append(float(np.mean(losses)))
    return history
