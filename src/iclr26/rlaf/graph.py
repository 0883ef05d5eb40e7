"""The literal–clause graph of a batch of CNF formulas, as flat index tensors for plain-torch message passing.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053): the GNN reads a formula as a bipartite graph with one
node per literal and one per clause, an edge where a literal occurs in a clause, and the pairing of each literal
with its complement; node features are ``log(1 + degree)`` (official code ``src/data/transform.py``, read for
the fact). A batch is the disjoint union of its formulas' graphs.

Node numbering: formula ``b`` owns variables ``var_offset[b] .. var_offset[b] + V_b − 1``; the literals of global
variable ``u`` are ``2u`` (positive) and ``2u + 1`` (negative), so the complement of literal ``l`` is ``l ^ 1``.
Clauses are numbered in formula order.

Shape glossary: B formulas; V variables (all formulas); L = 2V literals; C clauses; E literal occurrences (edges).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from iclr26.rlaf.cnf import CNF

__all__ = ["LiteralClauseGraph", "build_graph"]


@dataclass(frozen=True)
class LiteralClauseGraph:
    """A batch of formulas as one graph.

    Attributes:
        edge_lit: ``(E,)`` int64 literal node of each occurrence.
        edge_cls: ``(E,)`` int64 clause node of each occurrence.
        lit_features: ``(L, 1)`` float32 ``log(1 + literal degree)``.
        cls_features: ``(C, 1)`` float32 ``log(1 + clause length)``.
        var_batch: ``(V,)`` int64 formula index of each variable.
        num_vars: the ``V_b`` of each formula, in batch order.
    """

    edge_lit: Tensor
    edge_cls: Tensor
    lit_features: Tensor
    cls_features: Tensor
    var_batch: Tensor
    num_vars: tuple[int, ...]

    @property
    def num_formulas(self) -> int:
        """``B``."""
        return len(self.num_vars)

    @property
    def num_literals(self) -> int:
        """``L = 2V``."""
        return int(self.lit_features.shape[0])

    @property
    def num_clauses(self) -> int:
        """``C``."""
        return int(self.cls_features.shape[0])


def build_graph(cnfs: Sequence[CNF]) -> LiteralClauseGraph:
    """The disjoint-union literal–clause graph of ``cnfs``.

    Args:
        cnfs: the formulas of the batch (at least one).

    Raises:
        ValueError: for an empty batch or a formula without variables.
    """
    if not cnfs:
        raise ValueError("cnfs must hold at least one formula")
    lits: list[np.ndarray] = []
    clss: list[np.ndarray] = []
    var_offset = cls_offset = 0
    for b, cnf in enumerate(cnfs):
        if cnf.num_vars == 0:
            raise ValueError(f"cnfs[{b}] has no variables")
        lengths = np.fromiter((len(c) for c in cnf.clauses), dtype=np.int64, count=cnf.num_clauses)
        flat = np.fromiter((x for c in cnf.clauses for x in c), dtype=np.int64, count=int(lengths.sum()))
        # DIMACS ±v → literal node 2(var_offset + v − 1) + [negative]
        lits.append(2 * (var_offset + np.abs(flat) - 1) + (flat < 0))
        clss.append(cls_offset + np.repeat(np.arange(cnf.num_clauses, dtype=np.int64), lengths))
        var_offset += cnf.num_vars
        cls_offset += cnf.num_clauses
    edge_lit = torch.from_numpy(np.concatenate(lits))
    edge_cls = torch.from_numpy(np.concatenate(clss))
    lit_degree = torch.bincount(edge_lit, minlength=2 * var_offset).to(torch.float32)
    cls_degree = torch.bincount(edge_cls, minlength=cls_offset).to(torch.float32)
    num_vars = tuple(cnf.num_vars for cnf in cnfs)
    var_batch = torch.repeat_interleave(torch.arange(len(cnfs)), torch.tensor(num_vars))
    return LiteralClauseGraph(
        edge_lit=edge_lit,
        edge_cls=edge_cls,
        # the only node features, as in the official code: log(1 + degree)
        lit_features=torch.log1p(lit_degree).unsqueeze(1),  # (L, 1)
        cls_features=torch.log1p(cls_degree).unsqueeze(1),  # (C, 1)
        var_batch=var_batch,
        num_vars=num_vars,
    )
