"""The config of the RLAF reproduction (``iclr26 run rlaf``): families, sizes, GRPO budget, verdict thresholds, presets.

Defaults are the ``cpu`` scale; ``SCALES`` holds ``smoke`` and ``gpu``. Every field states its source. The user's
formulas (``--set data=DIR``) are parsed when the config is built (:func:`user_formulas`), so that a bad file stops
the command before any work.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from iclr26.common.config import ConfigError, ExperimentConfig, opt, require
from iclr26.rlaf.cnf import CNF, read_dimacs_folder
from iclr26.rlaf.generators import FAMILIES
from iclr26.rlaf.solvers import INJECTION_SUPPORT

#: Largest formula size (variables, or graph nodes) a size field accepts: far past the gpu preset's 500.
MAX_SIZE = 100_000
#: Most formulas per set a field accepts (the paper's training set has 10k).
MAX_FORMULAS = 1_000_000


@dataclass(frozen=True)
class RLAFConfig(ExperimentConfig):
    """Settings of ``iclr26 run rlaf`` (defaults: the ``cpu`` scale)."""

    families: tuple[str, ...] = opt(
        ("3sat", "3col"),
        "problem families, of '3sat' and '3col' (source: the paper's 3-SAT and 3-colouring experiments; its crypto "
        "family needs an external generator)",
    )
    sat_train_vars: int = opt(
        50,
        "3-SAT training size n (source: paper trains at n=200; 50 chosen when the CDCL was pure Python, so a call "
        "took ~10 ms)",
        ge=10,
        le=MAX_SIZE,
    )
    sat_test_vars: tuple[int, ...] = opt(
        (50, 100),
        "3-SAT test sizes: the training size (held out) and larger (source: paper tests 300/350/450 after training "
        "at 200, i.e. up to 2.25x; 100 = 2x here)",
        ge=10,
        le=MAX_SIZE,
    )
    col_train_nodes: int = opt(
        100,
        "3-colouring training graph size (source: paper trains at 300 nodes; 100 chosen for CPU cost)",
        ge=10,
        le=MAX_SIZE,
    )
    col_test_nodes: tuple[int, ...] = opt(
        (100, 150),
        "3-colouring test sizes (source: paper tests 400/500/600 after 300; scaled down)",
        ge=10,
        le=MAX_SIZE,
    )
    train_formulas: int = opt(
        64,
        "balanced training formulas per family, an even number (source: paper 10k; not in reach on 2 cores)",
        ge=2,
        le=MAX_FORMULAS,
    )
    val_formulas: int = opt(
        16, "balanced validation formulas per family, an even number (source: paper 100; scaled down)", ge=2,
        le=MAX_FORMULAS,
    )  # fmt: skip
    test_formulas: int = opt(
        32, "random test formulas per family and size (source: paper 200; scaled down)", ge=1, le=MAX_FORMULAS
    )
    train_seeds: int = opt(3, "independent trainings per family (not in the paper; for a seed spread)", ge=1, le=1000)
    iterations: int = opt(
        20,
        "GRPO iterations (source: paper up to 2000; 20 fit the CPU budget, and the validation cost stops improving "
        "after ~5-10 at this scale)",
        ge=1,
        le=10**6,
    )
    formulas_per_iteration: int = opt(
        16,
        "formulas sampled per GRPO iteration, also the supervised baseline's batch size (source: paper 100 per "
        "iteration); at most train_formulas",
        ge=1,
        le=MAX_FORMULAS,
    )
    samples_per_formula: int = opt(
        8,
        "parameterisations per formula, the GRPO group size M (source: paper 40; 8 for CPU); at least 2, since GRPO "
        "normalises within the group",
        ge=2,
        le=10_000,
    )
    grpo_steps: int = opt(10, "gradient steps per iteration (source: paper 50 minibatch steps)", ge=1, le=10_000)
    lr: float = opt(
        1e-3,
        "Adam learning rate (source: paper 1e-4 (3-SAT) / 5e-5 (colouring) over 2000 iterations; 1e-3 so that 20 "
        "iterations move the policy)",
        gt=0,
        le=1,
    )
    kl_coef: float = opt(
        0.1, "KL penalty beta to the sampling policy (source: official README, 0.1 for 3-SAT)", ge=0, le=100
    )
    clip_eps: float = opt(0.2, "GRPO ratio clip epsilon (source: official config, 0.2)", gt=0, lt=1)
    warmup_iterations: int = opt(
        3, "linear LR warm-up in iterations (source: official code uses 5; 3 for 20 iterations)", ge=0, le=10**6
    )
    sigma: float = opt(0.1, "log-normal weight scale sigma_w (source: official config, 0.1)", gt=0, le=10)
    channels: int = opt(
        32, "GNN width (source: paper 256; 32 for CPU, a trial with 64 gave similar ratios)", ge=1, le=4096
    )
    num_layers: int = opt(4, "GNN message-passing layers (source: paper 10; 4 for CPU)", ge=1, le=64)
    validate_every: int = opt(
        5, "iterations between validations of the policy mode (source: official code, 5)", ge=1, le=10**6
    )
    supervised_epochs: int = opt(
        40, "epochs of the supervised baseline (source: official code 50 on 10k formulas)", ge=1, le=10**6
    )
    supervised_lr: float = opt(
        1e-3, "Adam LR of the supervised baseline (source: official code 1e-4; raised for 40 epochs)", gt=0, le=1
    )
    pred_scale: float = opt(
        10.0, "weight scale of the supervised baseline (source: official README, pred_scale=10)", gt=0, le=1e6
    )
    eval_solvers: tuple[str, ...] = opt(
        ("cdcl", "ergo", "glucose4"),
        "solvers evaluated: 'cdcl' (full mechanism, the verdict's solver, required), 'ergo' (PySAT: "
        "activities+phases), 'glucose4' (PySAT: phases only) (source: paper uses Glucose and March)",
    )
    max_conflicts: int = opt(
        50_000,
        "conflict budget per solver call; a budget-out's cost follows budget_fill (source: paper 60 s CPU limit; a "
        "conflict budget keeps the cost deterministic)",
        ge=1,
        le=10**9,
    )
    budget_fill: Literal["completed_max", "batch_max"] = opt(
        "completed_max",
        "cost of a budget-out run in GRPO: the largest decision count of the batch's completed runs (official code) "
        "or of all runs, budget-outs included (batch_max)",
    )
    degree_scale: float = opt(
        0.01,
        "slope of the degree-heuristic baseline w = 1 + scale * z(degree), all polarities true (not in the paper: "
        "a hand-made rule that branches on the most frequent variables first, the cheapest guidance a learned "
        "policy must beat; 0.01 keeps the weights near 1, as the trained policies' are)",
        gt=0,
        lt=1,
    )
    confidence: float = opt(
        0.95,
        "one-sided confidence of the paired tests over formulas, RLAF against the degree heuristic and the "
        "supervised baseline (source: the conventional 95%, fixed before the run)",
        ge=0.5,
        lt=1,
    )
    margin: float = opt(
        0.05,
        "claim tolerance: RLAF/unguided mean-decision ratio must be <= 1 - margin on every family and size, and the "
        "shuffled control's must not (not in the paper; asks for a reduction of at least 5% against the "
        "deterministic unguided solver)",
        ge=0,
        lt=1,
    )
    min_unguided_decisions: float = opt(
        20.0,
        "gate: the unguided CDCL's mean decisions on every verdict set are at least this (not in the paper; at 20 "
        "decisions per formula the claimed 5% reduction is one decision, below it a set is solved nearly by "
        "propagation alone and leaves guidance nothing to save)",
        ge=0,
        le=1e12,
    )
    min_acting_fraction: float = opt(
        0.5,
        "gate: on every verdict set, the share of (formula, seed) pairs whose CDCL decision count under RLAF's "
        "guidance differs from the unguided one is at least this (not in the paper; the zero-initialised policy "
        "reproduces the unguided search exactly, so a policy that training did not move scores 0; a majority is "
        "asked so that the mean can move by the margin)",
        ge=0,
        le=1,
    )
    hard_sat_vars: tuple[int, ...] = opt(
        (200,),
        "sizes n of the harder 3-SAT evaluation set (ratio 4.26, solver cdcl only, unguided vs RLAF): where the "
        "solve, not the GNN, dominates the wall time; its wall-clock ratios are timings, never in the verdict "
        "(source: the paper trains at n=200 and tests up to 450; 200 fits the cpu budget, the gpu preset has "
        "200-300)",
        ge=10,
        le=MAX_SIZE,
    )
    hard_col_nodes: tuple[int, ...] = opt(
        (300,),
        "sizes (nodes) of the harder 3-colouring evaluation set, as hard_sat_vars (source: the paper's colouring "
        "training size, 300 nodes; 0.1-2 s per unguided CDCL solve here, the gpu preset 300-500)",
        ge=10,
        le=MAX_SIZE,
    )
    hard_formulas: int = opt(
        8,
        "formulas per size of the harder sets (not in the paper; 8 keep the cpu run's added time at about a minute "
        "of one thread)",
        ge=1,
        le=MAX_FORMULAS,
    )
    workers: int = opt(0, "solver processes; 0 = the cores available (not in the paper; 8 there)", ge=0, le=4096)
    data: Path | None = opt(
        None,
        "a folder of DIMACS formulas (*.cnf or gzipped *.cnf.gz, searched recursively; SATLIB's '%' trailer "
        "accepted) to evaluate on in place of the generated test sets; its sub-folders (SATLIB-style families) are "
        "also reported one by one; none = generated sets",
    )

    CPU_BOUND: ClassVar[str | None] = (
        "the reward is the decision count of the project's CDCL and of PySAT solvers run in worker processes; the "
        "GNN (width 32-128, a few hundred variables per formula) is too small for a GPU to help"
    )
    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "families": ("3sat",),
            "sat_train_vars": 20,
            "sat_test_vars": (20, 30),
            "train_formulas": 8,
            "val_formulas": 4,
            "test_formulas": 4,
            "train_seeds": 1,
            "iterations": 2,
            "formulas_per_iteration": 4,
            "samples_per_formula": 4,
            "grpo_steps": 2,
            "validate_every": 1,
            "supervised_epochs": 2,
            "channels": 16,
            "num_layers": 2,
            "warmup_iterations": 1,
            "hard_sat_vars": (40,),
            "hard_formulas": 2,
        },
        "gpu": {
            "sat_train_vars": 100,
            "sat_test_vars": (100, 150, 200),
            "col_train_nodes": 150,
            "col_test_nodes": (150, 200, 300),
            "train_formulas": 1000,
            "val_formulas": 64,
            "test_formulas": 100,
            "train_seeds": 3,
            "iterations": 200,
            "formulas_per_iteration": 32,
            "samples_per_formula": 40,
            "grpo_steps": 20,
            "lr": 3e-4,
            "warmup_iterations": 5,
            "channels": 128,
            "num_layers": 6,
            "supervised_epochs": 50,
            "hard_sat_vars": (200, 250, 300),
            "hard_col_nodes": (300, 400, 500),
            "hard_formulas": 50,
        },
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            len(self.families) > 0 and all(f in FAMILIES for f in self.families),
            "families",
            f"must be a non-empty subset of {FAMILIES}, got {self.families}",
        )
        for train_name, test_name in (("sat_train_vars", "sat_test_vars"), ("col_train_nodes", "col_test_nodes")):
            train, tests = getattr(self, train_name), getattr(self, test_name)
            require(train in tests, test_name, f"must contain the training size {train} (held out), got {tests}")
            require(any(t > train for t in tests), test_name, f"must contain a size larger than {train}, got {tests}")
        for name in ("train_formulas", "val_formulas"):
            value = getattr(self, name)
            require(value % 2 == 0, name, f"must be an even number (balanced SAT/UNSAT), got {value}")
        require(
            self.formulas_per_iteration <= self.train_formulas,
            "formulas_per_iteration",
            f"must be at most train_formulas={self.train_formulas}, got {self.formulas_per_iteration}",
        )
        require(
            "cdcl" in self.eval_solvers and all(s in INJECTION_SUPPORT for s in self.eval_solvers),
            "eval_solvers",
            f"must include 'cdcl' (the verdict's solver) and only names from {sorted(INJECTION_SUPPORT)}, got "
            f"{self.eval_solvers}",
        )
        if self.data is not None:
            user_formulas(self.data)

    def test_sets(self, family: str) -> tuple[str, ...]:
        """Labels of the evaluation sets of ``family``: its test sizes ascending, or ``("data",)`` with ``data``."""
        return ("data",) if self.data is not None else tuple(str(n) for n in self.test_sizes(family))

    def train_size(self, family: str) -> int:
        """The training size of ``family``."""
        return self.sat_train_vars if family == "3sat" else self.col_train_nodes

    def test_sizes(self, family: str) -> tuple[int, ...]:
        """The test sizes of ``family``, ascending."""
        return tuple(sorted(self.sat_test_vars if family == "3sat" else self.col_test_nodes))

    def hard_sizes(self, family: str) -> tuple[int, ...]:
        """The sizes of ``family``'s harder evaluation sets."""
        return self.hard_sat_vars if family == "3sat" else self.hard_col_nodes


def user_formulas(folder: Path) -> dict[str, CNF]:
    """The formulas of ``--set data=DIR``: relative path → formula, every file parsed.

    Raises:
        ConfigError: naming the field ``data``, the file and what is wrong: a missing path, a file where a folder
            is expected, no ``.cnf`` / ``.cnf.gz`` file, an empty, binary or malformed file (the line is named), a
            literal beyond the header's variable count, a formula without variables or clauses, or one too large
            for memory.
    """
    fix = "data must be a folder of DIMACS CNF files (.cnf, or gzipped .cnf.gz)"
    try:
        formulas = read_dimacs_folder(folder)
    except (OSError, ValueError) as err:
        raise ConfigError(f"config field 'data': {err}; {fix}") from None
    for name, cnf in formulas.items():
        if cnf.num_vars == 0 or cnf.num_clauses == 0:
            raise ConfigError(
                f"config field 'data': {name} declares {cnf.num_vars} variables and {cnf.num_clauses} clauses; "
                f"a formula to guide needs at least one of each; {fix}"
            )
    return formulas


def subfolders(names: list[str]) -> dict[str, list[int]]:
    """The formulas of ``data`` grouped by their first sub-folder (SATLIB ships one family per folder).

    Args:
        names: the formulas' paths relative to ``data`` (``/``-separated), in evaluation order.

    Returns:
        sub-folder → the indices of its formulas (files directly in ``data`` under ``"."``), in name order; empty
        when the folder holds fewer than two groups, since one group is the pooled set itself.
    """
    groups: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        groups.setdefault(name.split("/", 1)[0] if "/" in name else ".", []).append(index)
    return dict(sorted(groups.items())) if len(groups) >= 2 else {}
