"""Reproduction of RLAF: GRPO-trained GNN guidance versus the unguided solver and a supervised baseline.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053). For each problem family (random 3-SAT at the threshold and
3-colouring of ``G(n, 4.67/(n−1))``), and for each of ``train_seeds`` training seeds:

1. Generate a balanced training set and a validation set at the training size, and random test sets at the
   training size (held out) and at larger sizes (once per run, shared by the seeds).
2. Train an :class:`RLAFPolicy` with GRPO, the decisions of the project's CDCL with the full injection mechanism
   as the only reward; every ``validate_every`` iterations, evaluate the policy's mode on the validation set and
   keep the best policy (the official code's ``best.pt``; iteration 0 is the unguided-equivalent initial policy).
3. Train the expert-supervised baseline (backbone prediction for 3-SAT, UNSAT-core prediction for colouring).
4. Solve every test formula with every solver of ``eval_solvers`` unguided, with the hand-made degree heuristic
   (:func:`~iclr26.rlaf.guidance.degree_guidance`), RLAF-guided (mode) and supervised-guided; record decisions
   (and, apart from the measurements, wall time, with the GNN's time per formula for the guided solves).

With ``--set data=DIR`` the test sets are replaced by the user's own formulas: every ``*.cnf`` / ``*.cnf.gz`` file
under ``DIR`` (DIMACS, SATLIB's ``%`` trailer included), evaluated with every family's trained policies.

Verdict, two parts, both on the full-mechanism solver ``cdcl`` and for every family and test set: (1) the mean
over seeds of ``mean decisions (RLAF) / mean decisions (unguided)`` is at most ``1 − margin``; (2) RLAF beats the
degree heuristic: a paired test over formulas of ``log(1 + decisions)`` (RLAF's averaged over seeds) whose
one-sided ``confidence`` lower bound of the gain is above 0. RLAF against the supervised baseline and the degree
heuristic against the unguided solver are tested the same way and reported. Decisions are counted by the solvers
and deterministic; wall times (median over formulas of the paired ratio, GNN time included) go to the timings
only. The ratios on the PySAT solvers (Ergo: initial activities + phases; Glucose 4: phases only), the supervised
baseline's ratios and the largest speed-up are reported beside it.

Units of work (``iclr26 run rlaf --resume RUN_DIR`` skips the finished ones), per family: ``data-<family>`` (the
generated sets and the supervised labels), ``baselines-<family>-<set>-<solver>`` (unguided and degree heuristic),
then per training seed ``k``: ``grpo-<family>-seed<k>``, ``supervised-<family>-seed<k>`` and
``eval-<family>-seed<k>-<set>-<solver>``; ``<set>`` is a test size or ``data``. The harder sets
(``hard_sat_vars``, ``hard_col_nodes``, issue 17: where guidance has to pay for the GNN in wall-clock time) add
``data-hard-<family>``, ``hard-baseline-<family>-<n>`` (unguided CDCL) and per seed ``hard-<family>-seed<k>-<n>``
(RLAF's mode on the CDCL); their
decision ratios are reported in the metrics and their wall-clock ratios in the timings, neither in the verdict.

Deviations (details in the README): the full mechanism runs on the project's own CDCL, not on a patched Glucose;
the scale is far smaller (formulas, sizes, iterations, samples, GNN width); one KL weight for both families; no March
solver and no cryptographic family.
"""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch

from iclr26.common.config import ConfigError, ExperimentConfig, require, threshold
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, torch_generator
from iclr26.common.stats import paired_t
from iclr26.rlaf.cnf import CNF, read_dimacs_folder
from iclr26.rlaf.generators import FAMILIES, Instance, describe, generate, generate_balanced
from iclr26.rlaf.grpo_trainer import GRPOSettings, GRPOTrainer
from iclr26.rlaf.guidance import Guidance, degree_guidance, variable_degrees
from iclr26.rlaf.policy import RLAFPolicy
from iclr26.rlaf.result import SolveResult
from iclr26.rlaf.solvers import INJECTION_SUPPORT, SolverPool, SolveTask, available_workers
from iclr26.rlaf.supervised import LiteralPredictor, backbone_labels, core_labels, train_supervised

METHODS = ("unguided", "degree", "supervised", "rlaf")


@dataclass(frozen=True)
class RLAFConfig(ExperimentConfig):
    """Settings of ``iclr26 run rlaf`` (defaults: the ``cpu`` scale)."""

    families: tuple[str, ...] = field(
        default=("3sat", "3col"),
        metadata={
            "help": "problem families, of '3sat' and '3col' (source: the paper's 3-SAT and 3-colouring experiments; "
            "its crypto family needs an external generator)"
        },
    )
    sat_train_vars: int = field(
        default=50,
        metadata={
            "help": "3-SAT training size n (source: paper trains at n=200; 50 chosen when the CDCL was pure "
            "Python, so a call took ~10 ms)"
        },
    )
    sat_test_vars: tuple[int, ...] = field(
        default=(50, 100),
        metadata={
            "help": "3-SAT test sizes: the training size (held out) and larger (source: paper tests "
            "300/350/450 after training at 200, i.e. up to 2.25x; 100 = 2x here)"
        },
    )
    col_train_nodes: int = field(
        default=100,
        metadata={
            "help": "3-colouring training graph size (source: paper trains at 300 nodes; 100 chosen for CPU cost)"
        },
    )
    col_test_nodes: tuple[int, ...] = field(
        default=(100, 150),
        metadata={"help": "3-colouring test sizes (source: paper tests 400/500/600 after 300; scaled down)"},
    )
    train_formulas: int = field(
        default=64,
        metadata={"help": "balanced training formulas per family (source: paper 10k; not in reach on 2 cores)"},
    )
    val_formulas: int = field(
        default=16, metadata={"help": "balanced validation formulas per family (source: paper 100; scaled down)"}
    )
    test_formulas: int = field(
        default=32, metadata={"help": "random test formulas per family and size (source: paper 200; scaled down)"}
    )
    train_seeds: int = field(
        default=3, metadata={"help": "independent trainings per family (not in the paper; for a seed spread)"}
    )
    iterations: int = field(
        default=20,
        metadata={
            "help": "GRPO iterations (source: paper up to 2000; 20 fit the CPU budget, and the validation cost stops "
            "improving after ~5-10 at this scale)"
        },
    )
    formulas_per_iteration: int = field(
        default=16,
        metadata={
            "help": "formulas sampled per GRPO iteration, also the supervised baseline's batch size (source: "
            "paper 100 per iteration)"
        },
    )
    samples_per_formula: int = field(
        default=8,
        metadata={"help": "parameterisations per formula, the GRPO group size M (source: paper 40; 8 for CPU)"},
    )
    grpo_steps: int = field(
        default=10, metadata={"help": "gradient steps per iteration (source: paper 50 minibatch steps)"}
    )
    lr: float = field(
        default=1e-3,
        metadata={
            "help": "Adam learning rate (source: paper 1e-4 (3-SAT) / 5e-5 (colouring) over 2000 "
            "iterations; 1e-3 so that 20 iterations move the policy)"
        },
    )
    kl_coef: float = field(
        default=0.1,
        metadata={"help": "KL penalty beta to the sampling policy (source: official README, 0.1 for 3-SAT)"},
    )
    clip_eps: float = field(default=0.2, metadata={"help": "GRPO ratio clip epsilon (source: config, 0.2)"})
    warmup_iterations: int = field(
        default=3, metadata={"help": "linear LR warm-up in iterations (source: code uses 5; 3 for 20 iterations)"}
    )
    sigma: float = field(default=0.1, metadata={"help": "log-normal weight scale sigma_w (source: config, 0.1)"})
    channels: int = field(
        default=32, metadata={"help": "GNN width (source: paper 256; 32 for CPU, a trial with 64 gave similar ratios)"}
    )
    num_layers: int = field(default=4, metadata={"help": "GNN message-passing layers (source: paper 10; 4 for CPU)"})
    validate_every: int = field(
        default=5, metadata={"help": "iterations between validations of the policy mode (source: code, 5)"}
    )
    supervised_epochs: int = field(
        default=40, metadata={"help": "epochs of the supervised baseline (source: code 50 on 10k formulas)"}
    )
    supervised_lr: float = field(
        default=1e-3, metadata={"help": "Adam LR of the supervised baseline (source: code 1e-4; raised for 40 epochs)"}
    )
    pred_scale: float = field(
        default=10.0,
        metadata={"help": "weight scale of the supervised baseline (source: official README, pred_scale=10)"},
    )
    eval_solvers: tuple[str, ...] = field(
        default=("cdcl", "ergo", "glucose4"),
        metadata={
            "help": "solvers evaluated: 'cdcl' (full mechanism), 'ergo' (PySAT: activities+phases), "
            "'glucose4' (PySAT: phases only) (source: paper uses Glucose and March)"
        },
    )
    max_conflicts: int = field(
        default=50_000,
        metadata={
            "help": "conflict budget per solver call; a budget-out's cost follows budget_fill (source: paper "
            "60 s CPU limit; a conflict budget keeps the cost deterministic)"
        },
    )
    budget_fill: Literal["completed_max", "batch_max"] = field(
        default="completed_max",
        metadata={
            "help": "cost of a budget-out run in GRPO: the largest decision count of the batch's completed runs "
            "(official code) or of all runs, budget-outs included (batch_max, this package's earlier rule)"
        },
    )
    degree_scale: float = field(
        default=0.01,
        metadata={
            "help": "slope of the degree-heuristic baseline w = 1 + scale * z(degree), all polarities true (source: "
            "issue 17's hand-made heuristic, which explained most of RLAF's gain on SATLIB)"
        },
    )
    confidence: float = field(
        default=0.95,
        metadata={
            "help": "one-sided confidence of the paired tests over formulas, RLAF against the degree heuristic and "
            "the supervised baseline (source: the conventional 95%, fixed before the run)"
        },
    )
    margin: float = field(
        default=0.05,
        metadata={
            "help": "claim tolerance: RLAF/unguided mean-decision ratio must be <= 1 - margin on every "
            "family and size (not in the paper; asks for a reduction of at least 5% against the deterministic "
            "unguided solver)"
        },
    )
    hard_sat_vars: tuple[int, ...] = field(
        default=(200,),
        metadata={
            "help": "sizes n of the harder 3-SAT evaluation set (ratio 4.26, solver cdcl only, unguided vs RLAF): "
            "where the solve, not the GNN, dominates the wall time; its wall-clock ratios are timings, never in the "
            "verdict (source: issue 17 asks for n = 200-300; 200 fits the cpu budget, the gpu preset has 200-300)"
        },
    )
    hard_col_nodes: tuple[int, ...] = field(
        default=(300,),
        metadata={
            "help": "sizes (nodes) of the harder 3-colouring evaluation set, as hard_sat_vars (source: issue 17 asks "
            "for graph colouring too; 300 nodes take 0.1-2 s per unguided CDCL solve here, the gpu preset 300-500)"
        },
    )
    hard_formulas: int = field(
        default=8,
        metadata={
            "help": "formulas per size of the harder sets (not in the paper; 8 keep the cpu run's added time "
            "at about a minute of one thread)"
        },
    )
    workers: int = field(
        default=0, metadata={"help": "solver processes; 0 = the cores available (not in the paper; 8 there)"}
    )
    data: Path | None = field(
        default=None,
        metadata={
            "help": "a folder of DIMACS formulas (*.cnf or gzipped *.cnf.gz, searched recursively; SATLIB's "
            "'%' trailer accepted) to evaluate on in place of the generated test sets; none = generated sets"
        },
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
            require(train >= 10, train_name, f"must be >= 10, got {train}")
            require(train in tests, test_name, f"must contain the training size {train} (held out), got {tests}")
            require(any(t > train for t in tests), test_name, f"must contain a size larger than {train}, got {tests}")
        for name in ("train_formulas", "val_formulas"):
            value = getattr(self, name)
            require(value >= 2 and value % 2 == 0, name, f"must be an even number >= 2 (balanced), got {value}")
        require(self.test_formulas >= 1, "test_formulas", f"must be >= 1, got {self.test_formulas}")
        require(self.train_seeds >= 1, "train_seeds", f"must be >= 1, got {self.train_seeds}")
        require(self.iterations >= 1, "iterations", f"must be >= 1, got {self.iterations}")
        require(
            1 <= self.formulas_per_iteration <= self.train_formulas,
            "formulas_per_iteration",
            f"must be in [1, train_formulas={self.train_formulas}], got {self.formulas_per_iteration}",
        )
        require(
            self.samples_per_formula >= 2,
            "samples_per_formula",
            f"must be >= 2 (GRPO normalises within the group), got {self.samples_per_formula}",
        )
        require(self.grpo_steps >= 1, "grpo_steps", f"must be >= 1, got {self.grpo_steps}")
        require(self.lr > 0, "lr", f"must be > 0, got {self.lr}")
        require(self.kl_coef >= 0, "kl_coef", f"must be >= 0, got {self.kl_coef}")
        require(0 < self.clip_eps < 1, "clip_eps", f"must be in (0, 1), got {self.clip_eps}")
        require(self.warmup_iterations >= 0, "warmup_iterations", f"must be >= 0, got {self.warmup_iterations}")
        require(self.sigma > 0, "sigma", f"must be > 0, got {self.sigma}")
        require(
            self.channels >= 1 and self.num_layers >= 1,
            "channels",
            f"channels and num_layers must be >= 1, got {self.channels}, {self.num_layers}",
        )
        require(self.validate_every >= 1, "validate_every", f"must be >= 1, got {self.validate_every}")
        require(self.supervised_epochs >= 1, "supervised_epochs", f"must be >= 1, got {self.supervised_epochs}")
        require(self.supervised_lr > 0, "supervised_lr", f"must be > 0, got {self.supervised_lr}")
        require(self.pred_scale > 0, "pred_scale", f"must be > 0, got {self.pred_scale}")
        require(
            "cdcl" in self.eval_solvers and all(s in INJECTION_SUPPORT for s in self.eval_solvers),
            "eval_solvers",
            f"must include 'cdcl' (the verdict's solver) and only names from "
            f"{sorted(INJECTION_SUPPORT)}, got {self.eval_solvers}",
        )
        require(self.max_conflicts >= 1, "max_conflicts", f"must be >= 1, got {self.max_conflicts}")
        require(0 <= self.margin < 1, "margin", f"must be in [0, 1), got {self.margin}")
        require(0 < self.degree_scale < 1, "degree_scale", f"must be in (0, 1), got {self.degree_scale}")
        require(0.5 <= self.confidence < 1, "confidence", f"must be in [0.5, 1), got {self.confidence}")
        require(
            all(n >= 10 for n in self.hard_sat_vars), "hard_sat_vars", f"must be sizes >= 10, got {self.hard_sat_vars}"
        )
        require(
            all(n >= 10 for n in self.hard_col_nodes),
            "hard_col_nodes",
            f"must be sizes >= 10, got {self.hard_col_nodes}",
        )
        require(self.hard_formulas >= 1, "hard_formulas", f"must be >= 1, got {self.hard_formulas}")
        require(self.workers >= 0, "workers", f"must be >= 0 (0 = all cores), got {self.workers}")
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


@dataclass
class _Data:
    """A family's generated sets and evaluation sets.

    Attributes:
        train: the balanced training set.
        val: the balanced validation set.
        test: evaluation set label (a size, or ``data``) → its formulas.
        labels: the supervised baseline's per-literal labels of every training formula.
    """

    train: list[Instance]
    val: list[Instance]
    test: dict[str, list[CNF]]
    labels: list[np.ndarray]


def _make_data(config: RLAFConfig, family: str) -> _Data:
    size = config.train_size(family)
    train = generate_balanced(family, size, config.train_formulas, seed=derive_seed(config.seed, "train"))
    if config.data is not None:
        test = {"data": list(user_formulas(config.data).values())}
    else:
        test = {
            str(n): [i.cnf for i in generate(family, n, config.test_formulas, seed=derive_seed(config.seed, "test"))]
            for n in config.test_sizes(family)
        }
    labeller = backbone_labels if family == "3sat" else core_labels
    return _Data(
        train=train,
        val=generate_balanced(family, size, config.val_formulas, seed=derive_seed(config.seed, "val")),
        test=test,
        labels=[labeller(inst.cnf) for inst in train],
    )


def _hard_sizes(config: RLAFConfig, family: str) -> tuple[int, ...]:
    return config.hard_sat_vars if family == "3sat" else config.hard_col_nodes


def _make_hard_sets(config: RLAFConfig, family: str) -> dict[str, list[CNF]]:
    """The harder evaluation sets of ``family``: size label → ``hard_formulas`` random formulas (3-SAT at the
    threshold, 3-colouring of the family's random graphs)."""
    return {
        str(n): [i.cnf for i in generate(family, n, config.hard_formulas, seed=derive_seed(config.seed, "hard", n))]
        for n in _hard_sizes(config, family)
    }


def _hard_sets_apply(config: RLAFConfig, family: str) -> bool:
    """Whether ``family`` gets the harder evaluation sets (generated test sets, at least one size)."""
    return config.data is None and len(_hard_sizes(config, family)) > 0


def _mean_decisions(results: list[SolveResult]) -> float:
    return float(np.mean([r.decisions for r in results]))


@dataclass(frozen=True)
class _Trained:
    """A trained network as plain data (a unit's result): its parameters and its training history."""

    state: dict[str, torch.Tensor]
    history: dict[str, Any]


def _policy(config: RLAFConfig, state: dict[str, torch.Tensor] | None = None) -> RLAFPolicy:
    policy = RLAFPolicy(channels=config.channels, num_layers=config.num_layers, sigma=config.sigma)
    if state is not None:
        policy.load_state_dict(state)
    return policy


def _predictor(config: RLAFConfig, family: str, state: dict[str, torch.Tensor] | None = None) -> LiteralPredictor:
    model = LiteralPredictor(
        channels=config.channels,
        num_layers=config.num_layers,
        target="backbone" if family == "3sat" else "core",
        pred_scale=config.pred_scale,
    )
    if state is not None:
        model.load_state_dict(state)
    return model


def _train_rlaf(
    config: RLAFConfig, family: str, data: _Data, seed: int, label: str, pool: SolverPool, ctx: RunContext
) -> _Trained:
    torch.manual_seed(seed)
    policy = _policy(config)
    settings = GRPOSettings(
        samples_per_formula=config.samples_per_formula,
        steps=config.grpo_steps,
        clip_eps=config.clip_eps,
        kl_coef=config.kl_coef,
        lr=config.lr,
        warmup_iterations=config.warmup_iterations,
        max_conflicts=config.max_conflicts,
        fill_rule=config.budget_fill,
    )
    trainer = GRPOTrainer(policy, settings, pool=pool, seed=derive_seed(seed, "sample"))
    val_cnfs = [i.cnf for i in data.val]

    def validate() -> float:
        guidance = policy.guidance(val_cnfs)
        return _mean_decisions(
            pool.map(
                [SolveTask(c, g, max_conflicts=config.max_conflicts) for c, g in zip(val_cnfs, guidance, strict=True)]
            )
        )

    rng = np.random.default_rng(derive_seed(seed, "batches"))
    history: dict[str, list[float]] = {
        "val_iteration": [0.0],
        "val_decisions": [validate()],
        "sampled_cost": [],
        "kl": [],
        "clip_fraction": [],
    }
    best_score, best_state = history["val_decisions"][0], copy.deepcopy(policy.state_dict())
    for it in ctx.progress(range(1, config.iterations + 1), total=config.iterations, desc=f"GRPO {family} {label}"):
        batch = rng.choice(len(data.train), size=config.formulas_per_iteration, replace=False)
        stats = trainer.iteration([data.train[i].cnf for i in batch])
        history["sampled_cost"].append(stats.mean_cost)
        history["kl"].append(stats.kl)
        history["clip_fraction"].append(stats.clip_fraction)
        if it % config.validate_every == 0 or it == config.iterations:
            score = validate()
            history["val_iteration"].append(float(it))
            history["val_decisions"].append(score)
            if score < best_score:
                best_score, best_state = score, copy.deepcopy(policy.state_dict())
    history["best_val_decisions"] = [best_score]
    return _Trained(state=best_state, history=history)


def _train_supervised(config: RLAFConfig, family: str, data: _Data, seed: int) -> _Trained:
    torch.manual_seed(seed)
    model = _predictor(config, family)
    # official: backbone models train on the satisfiable formulas only; core models on all
    keep = [i for i, inst in enumerate(data.train) if model.target == "core" or inst.satisfiable]
    losses = train_supervised(
        model,
        [data.train[i].cnf for i in keep],
        [data.labels[i] for i in keep],
        epochs=config.supervised_epochs,
        batch_size=config.formulas_per_iteration,
        lr=config.supervised_lr,
        generator=torch_generator(derive_seed(seed, "shuffle")),
    )
    return _Trained(state=copy.deepcopy(model.state_dict()), history={"supervised_loss": losses})


def _policy_diagnostics(policy: RLAFPolicy, cnfs: list[CNF]) -> dict[str, float]:
    """What the mode parameterisation looks like on ``cnfs``: how many polarities are "true", how spread
    the weights are, and how closely they follow the variable degree (occurrences of either literal)."""
    guidance = policy.guidance(cnfs)
    polarity = np.concatenate([g.polarity for g in guidance])
    weights = [g.weight for g in guidance]
    w_all, d_all = np.concatenate(weights), np.concatenate([variable_degrees(cnf) for cnf in cnfs])
    # Pearson correlation over all variables of the set (0 when the weights are constant, e.g. the initial policy)
    corr = float(np.corrcoef(w_all, d_all)[0, 1]) if w_all.std() > 0 and d_all.std() > 0 else 0.0
    return {
        "polarity_true_fraction": float(polarity.mean()),
        "weight_cv": float(np.mean([w.std() / w.mean() for w in weights])),
        "weight_min": float(w_all.min()),
        "weight_max": float(w_all.max()),
        "weight_degree_corr": corr,
    }


def _solve_all(
    config: RLAFConfig, cnfs: list[CNF], solver: str, guidance: dict[str, list[Guidance | None]], pool: SolverPool
) -> dict[str, list[SolveResult]]:
    """``out[method]``: one result of ``solver`` per formula, for every method's guidance."""
    tasks = [
        SolveTask(cnf, guidance[method][k], solver=solver, max_conflicts=config.max_conflicts)
        for method in guidance
        for k, cnf in enumerate(cnfs)
    ]
    results = pool.map(tasks)
    n = len(cnfs)
    return {method: results[j * n : (j + 1) * n] for j, method in enumerate(guidance)}


def run(config: RLAFConfig, ctx: RunContext) -> Outcome:
    """Train and evaluate per family and seed; the verdict compares RLAF with the unguided CDCL."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the solver processes use the cores; a multi-threaded torch would oversubscribe
    try:
        with SolverPool(config.workers or available_workers()) as pool:
            return _run(config, ctx, pool)
    finally:
        torch.set_num_threads(threads)


@dataclass(frozen=True)
class _Guided:
    """One evaluation unit's result: every guided method's solver results on one set, and the mean GNN time per
    formula of each method (a timing)."""

    results: dict[str, list[SolveResult]]
    inference_s: dict[str, float]


def _evaluate_guided(
    config: RLAFConfig, family: str, cnfs: list[CNF], solver: str, trained: dict[str, _Trained], pool: SolverPool
) -> _Guided:
    """Step 4 for one seed, set and solver: guidance from each trained network (mode), then the solver."""
    models = {"supervised": _predictor(config, family, trained["supervised"].state), "rlaf": _policy(config)}
    models["rlaf"].load_state_dict(trained["rlaf"].state)
    guidance, inference = {}, {}
    for method, model in models.items():
        start = time.perf_counter()
        guidance[method] = model.guidance(cnfs)
        inference[method] = (time.perf_counter() - start) / len(cnfs)
    return _Guided(results=_solve_all(config, cnfs, solver, guidance, pool), inference_s=inference)


# per seed: mean and median decisions, mean conflicts and propagations, mean-decision ratio to the unguided solver,
# number of budget-outs (all counted by the solvers, so deterministic); the timings keep the mean solver wall time
# and the mean GNN time per formula
_STATISTICS = ("mean", "median", "conflicts", "propagations", "ratio", "unknown")
_TIMINGS = ("wall_s", "inference_s")


def _record(
    rows: dict[str, dict[str, list[float]]],
    times: dict[str, dict[str, list[float]]],
    by_method: dict[str, list[SolveResult]],
    inference_s: dict[str, float],
) -> None:
    """Append one seed's statistics of one solver to ``rows[method][statistic]`` and ``times[method][timing]``."""
    base = _mean_decisions(by_method["unguided"])
    for method, res in by_method.items():
        entry = rows.setdefault(method, {k: [] for k in _STATISTICS})
        decisions = [r.decisions for r in res]
        entry["mean"].append(float(np.mean(decisions)))
        entry["median"].append(float(np.median(decisions)))
        entry["conflicts"].append(float(np.mean([r.conflicts for r in res])))
        entry["propagations"].append(float(np.mean([r.propagations for r in res])))
        entry["ratio"].append(float(np.mean(decisions)) / max(base, 1e-9))
        entry["unknown"].append(sum(r.status == "UNKNOWN" for r in res))
        timing = times.setdefault(method, {k: [] for k in _TIMINGS})
        timing["wall_s"].append(float(np.mean([r.wall_time_s for r in res])))
        timing["inference_s"].append(inference_s.get(method, 0.0))


def _run(config: RLAFConfig, ctx: RunContext, pool: SolverPool) -> Outcome:
    families = {family: _run_family(config, ctx, pool, family) for family in config.families}
    wall = {
        f"{f}/{label}/{solver}/{method}": float(np.median(ratios))
        for f, r in families.items()
        for label, by_solver in r.wall_ratios.items()
        for solver, by_method in by_solver.items()
        for method, ratios in by_method.items()
    }
    paired = {
        f"{f}/{label}": {
            "rlaf_vs_degree": _beats(config, by_method["rlaf"], by_method["degree"]),
            "rlaf_vs_supervised": _beats(config, by_method["rlaf"], by_method["supervised"]),
            "degree_vs_unguided": _beats(config, by_method["degree"], by_method["unguided"]),
        }
        for f, r in families.items()
        for label, by_method in r.instances.items()
    }
    return _outcome(
        config,
        ctx,
        table={f: r.rows for f, r in families.items()},
        training={f: r.training for f, r in families.items()},
        distributions={f: r.distributions for f, r in families.items()},
        timings={
            "results": {f: r.times for f, r in families.items()},
            "median_wall_ratio_with_inference": wall,
            "hard": {f"{f}-{label}": _hard_timings(h) for f, r in families.items() for label, h in r.hard.items()},
        },
        paired=paired,
        hard={
            f"{f}-{label}": {
                "rlaf_over_unguided_mean_decisions": h["decision_ratio"],
                "mean_over_seeds": _seed_mean(h["decision_ratio"]),
                "rlaf_unknown": h["unknown"],
                "unguided_unknown": h["unguided_unknown"],
                "formulas": len(h["unguided_s"]),
            }
            for f, r in families.items()
            for label, h in r.hard.items()
        },
    )


def _hard_timings(hard: dict[str, Any]) -> dict[str, Any]:
    """The wall-clock summary of one harder set (timings only): the median over formulas (and seeds) of
    (guided solve + GNN time per formula) / unguided solve, its quartiles, and the median times."""
    ratios = hard["wall_ratios"]
    q1, _, q3 = np.quantile(ratios, [0.25, 0.5, 0.75])
    return {
        "median_wall_ratio_with_inference": float(np.median(ratios)),
        "wall_ratio_quartiles": [float(q1), float(q3)],
        "median_unguided_s": float(np.median(hard["unguided_s"])),
        "median_guided_s": float(np.median(hard["guided_s"])),
        "mean_inference_s_per_formula": float(np.mean(hard["inference_s"])),
    }


@dataclass
class _FamilyResults:
    """What one family's units gave, assembled.

    Attributes:
        rows: ``[set][solver][method][statistic]``, one entry per seed (see ``_STATISTICS``).
        times: ``[set][solver][method][timing]``, one entry per seed (see ``_TIMINGS``).
        training: ``seed<k>`` → training histories and policy diagnostics.
        distributions: set → method → decisions per formula on the CDCL (seed 0).
        instances: set → method → one list per seed of the decisions per formula on the CDCL (the paired tests).
        wall_ratios: set → solver → guided method → per formula and seed, wall time of the guided solve plus the
            GNN's time per formula over the unguided solve's wall time (a timing, never in the verdict).
        hard: harder set's size → ``decision_ratio`` (per seed, RLAF / unguided mean decisions on the CDCL),
            ``unknown`` (budget-outs per seed, RLAF; and of the unguided solves), and the timings ``wall_ratios``
            (per formula and seed, as above), ``unguided_s``, ``guided_s`` and ``inference_s`` (per formula).
    """

    rows: dict[str, dict[str, Any]]
    times: dict[str, dict[str, Any]]
    training: dict[str, Any]
    distributions: dict[str, dict[str, list[int]]]
    instances: dict[str, dict[str, list[list[int]]]]
    wall_ratios: dict[str, dict[str, dict[str, list[float]]]]
    hard: dict[str, dict[str, Any]] = field(default_factory=dict)


def _wall_ratios(guided: list[SolveResult], unguided: list[SolveResult], inference_s: float) -> list[float]:
    """Per formula: (guided solve wall time + GNN time per formula) / unguided solve wall time."""
    return [(g.wall_time_s + inference_s) / max(u.wall_time_s, 1e-9) for g, u in zip(guided, unguided, strict=True)]


def _log_decisions(runs: list[list[int]]) -> np.ndarray:
    """``(F,)`` log(1 + decisions) per formula, averaged over the seeds' runs (rows)."""
    return np.log1p(np.asarray(runs, dtype=float)).mean(axis=0)


def _beats(config: RLAFConfig, method: list[list[int]], baseline: list[list[int]]) -> dict[str, Any]:
    """Paired test over formulas of ``d = log(1 + decisions_baseline) − log(1 + decisions_method)`` (each averaged
    over seeds): the method beats the baseline when the one-sided ``confidence`` lower bound of mean ``d`` is > 0.
    ``exp(mean d)`` is the geometric-mean factor of fewer decisions."""
    test = paired_t(_log_decisions(baseline), _log_decisions(method), confidence=config.confidence)
    return {
        "formulas": test.n,
        "mean_log_gain": test.mean,
        "ci95": [test.ci_low, test.ci_high],
        "lower_bound": test.lower,
        "p_greater": test.p_greater,
        "geomean_factor": float(np.exp(test.mean)),
        "beats": bool(test.lower > 0),
    }


def _run_family(config: RLAFConfig, ctx: RunContext, pool: SolverPool, family: str) -> _FamilyResults:
    """Steps 1-4 for one family, every expensive part a unit of work."""
    # step 1: data (and the supervised labels)
    data = ctx.unit(f"data-{family}", lambda: _make_data(config, family))
    ctx.log(
        f"{family}: train {describe(data.train)}, val {describe(data.val)}, test sets "
        + ", ".join(f"{label} x {len(cnfs)}" for label, cnfs in data.test.items())
    )
    # the unguided solver and the degree heuristic are deterministic: solve each test set once, reuse for every seed
    baselines = {
        (label, solver): ctx.unit(
            f"baselines-{family}-{label}-{solver}",
            lambda cnfs=cnfs, solver=solver: _solve_all(
                config,
                cnfs,
                solver,
                {
                    "unguided": [None] * len(cnfs),
                    "degree": [degree_guidance(cnf, scale=config.degree_scale) for cnf in cnfs],
                },
                pool,
            ),
        )
        for label, cnfs in data.test.items()
        for solver in config.eval_solvers
    }
    out = _FamilyResults(
        rows={label: {s: {} for s in config.eval_solvers} for label in data.test},
        times={label: {s: {} for s in config.eval_solvers} for label in data.test},
        training={},
        distributions={},
        instances={label: {m: [] for m in METHODS} for label in data.test},
        wall_ratios={label: {s: {"supervised": [], "rlaf": []} for s in config.eval_solvers} for label in data.test},
    )
    hard_sets: dict[str, list[CNF]] = {}
    hard_baselines: dict[str, list[SolveResult]] = {}
    if _hard_sets_apply(config, family):
        hard_sets = ctx.unit(f"data-hard-{family}", lambda: _make_hard_sets(config, family))
        for label, cnfs in hard_sets.items():
            hard_baselines[label] = ctx.unit(
                f"hard-baseline-{family}-{label}",
                lambda cnfs=cnfs: _solve_all(config, cnfs, "cdcl", {"unguided": [None] * len(cnfs)}, pool)["unguided"],
            )
            out.hard[label] = {
                "decision_ratio": [],
                "unknown": [],
                "unguided_unknown": sum(r.status == "UNKNOWN" for r in hard_baselines[label]),
                "wall_ratios": [],
                "unguided_s": [r.wall_time_s for r in hard_baselines[label]],
                "guided_s": [],
                "inference_s": [],
            }
    for k in range(config.train_seeds):
        seed = derive_seed(config.seed, family, "seed", k)
        # steps 2-3: RLAF by GRPO, and the supervised baseline
        trained = {
            "rlaf": ctx.unit(
                f"grpo-{family}-seed{k}",
                lambda seed=seed, k=k: _train_rlaf(config, family, data, seed, f"seed {k}", pool, ctx),
            ),
            "supervised": ctx.unit(
                f"supervised-{family}-seed{k}", lambda seed=seed: _train_supervised(config, family, data, seed)
            ),
        }
        policy = _policy(config, trained["rlaf"].state)
        first_set = next(iter(data.test.values()))  # the held-out training-size set, or the user's formulas
        out.training[f"seed{k}"] = {
            **trained["rlaf"].history,
            **trained["supervised"].history,
            "policy": _policy_diagnostics(policy, first_set),
        }
        if k == 0:
            policy.save(ctx.out_dir / f"rlaf_policy_{family}.pt")
        # step 4: every test set and solver, both guided methods
        for label, cnfs in data.test.items():
            for solver in config.eval_solvers:
                guided = ctx.unit(
                    f"eval-{family}-seed{k}-{label}-{solver}",
                    lambda cnfs=cnfs, solver=solver, trained=trained: _evaluate_guided(
                        config, family, cnfs, solver, trained, pool
                    ),
                )
                by_method = {**baselines[label, solver], **guided.results}
                _record(out.rows[label][solver], out.times[label][solver], by_method, guided.inference_s)
                for method, ratios in out.wall_ratios[label][solver].items():
                    ratios.extend(_wall_ratios(by_method[method], by_method["unguided"], guided.inference_s[method]))
                if solver == "cdcl":
                    for method, res in by_method.items():
                        out.instances[label][method].append([r.decisions for r in res])
                if k == 0 and solver == "cdcl":
                    out.distributions[label] = {m: [r.decisions for r in res] for m, res in by_method.items()}
        # the harder sets: RLAF's mode on the CDCL against the unguided CDCL (issue 17's wall-clock question)
        for label, cnfs in hard_sets.items():
            hard = ctx.unit(
                f"hard-{family}-seed{k}-{label}",
                lambda cnfs=cnfs, trained=trained: _evaluate_rlaf(config, cnfs, trained["rlaf"], pool),
            )
            res, unguided, entry = hard.results["rlaf"], hard_baselines[label], out.hard[label]
            entry["decision_ratio"].append(_mean_decisions(res) / max(_mean_decisions(unguided), 1e-9))
            entry["unknown"].append(sum(r.status == "UNKNOWN" for r in res))
            entry["wall_ratios"].extend(_wall_ratios(res, unguided, hard.inference_s["rlaf"]))
            entry["guided_s"].extend(r.wall_time_s for r in res)
            entry["inference_s"].append(hard.inference_s["rlaf"])
    return out


def _evaluate_rlaf(config: RLAFConfig, cnfs: list[CNF], trained: _Trained, pool: SolverPool) -> _Guided:
    """RLAF's mode on the CDCL for one seed and one harder set: the GNN's guidance (timed), then the solver."""
    policy = _policy(config, trained.state)
    start = time.perf_counter()
    guidance = policy.guidance(cnfs)
    inference = (time.perf_counter() - start) / len(cnfs)
    return _Guided(results=_solve_all(config, cnfs, "cdcl", {"rlaf": guidance}, pool), inference_s={"rlaf": inference})


def _seed_mean(values: list[float]) -> float:
    return float(statistics.fmean(values))


def _outcome(
    config: RLAFConfig,
    ctx: RunContext,
    table: dict[str, Any],
    training: dict[str, Any],
    distributions: dict[str, dict[str, dict[str, list[int]]]],
    timings: dict[str, Any],
    paired: dict[str, dict[str, dict[str, Any]]],
    hard: dict[str, dict[str, Any]],
) -> Outcome:
    summary: dict[str, float] = {}
    verdict_ratios: dict[str, float] = {}
    for family, by_size in table.items():
        for size, by_solver in by_size.items():
            for solver, by_method in by_solver.items():
                for method in ("degree", "supervised", "rlaf"):
                    key = f"{family}/{size}/{solver}/{method}"
                    summary[key] = _seed_mean(by_method[method]["ratio"])
                    if solver == "cdcl" and method == "rlaf":
                        verdict_ratios[f"{family}/{size}"] = summary[key]
    bound = 1.0 - config.margin
    ratio_part = all(r <= bound for r in verdict_ratios.values())
    degree_part = all(p["rlaf_vs_degree"]["beats"] for p in paired.values())
    held = ratio_part and degree_part
    best_speedup = max(1.0 / max(r, 1e-9) for k, r in summary.items() if k.endswith("/rlaf"))
    rlaf_vs_supervised = {
        k: summary[f"{k.split('/')[0]}/{k.split('/')[1]}/cdcl/rlaf"]
        / max(summary[f"{k.split('/')[0]}/{k.split('/')[1]}/cdcl/supervised"], 1e-9)
        for k in verdict_ratios
    }
    ratios_text = ", ".join(f"{k} {v:.2f}" for k, v in verdict_ratios.items())
    degree_text = ", ".join(
        f"{k} x{p['rlaf_vs_degree']['geomean_factor']:.2f} ({'beats' if p['rlaf_vs_degree']['beats'] else 'not shown'})"
        for k, p in paired.items()
    )
    measurement = (
        f"RLAF/unguided mean decisions (CDCL, full injection, {config.train_seeds} seed(s)): {ratios_text}; "
        f"RLAF vs degree heuristic (geometric-mean factor of fewer decisions, paired over formulas): {degree_text}; "
        f"best speed-up {best_speedup:.2f}x"
    )
    notes = (
        "Cost = decisions of the project's CDCL (full mechanism) and of PySAT Ergo / Glucose 4 (partial "
        "injection); policies trained on the CDCL only. The claim needs both parts: the ratio bound on every set, "
        "and RLAF beating the hand-made degree heuristic (paired over formulas) on every set. Wall-clock ratios "
        "with the GNN's time included are in the timings only, also for the harder sets ("
        f"{', '.join(hard) or 'none'}, CDCL only, outside the verdict). Small scale: see the README's deviations."
    )
    timings["summary"] = (  # the README's results block shows it (iclr26.report.TIMING_SUMMARY)
        "harder sets (CDCL only), (guided solve + GNN) / unguided solve, median over formulas and seeds "
        "[quartiles]: "
        + (
            "; ".join(
                f"{label} {t['median_wall_ratio_with_inference']:.2f} "
                f"[{t['wall_ratio_quartiles'][0]:.2f}, {t['wall_ratio_quartiles'][1]:.2f}]"
                for label, t in timings["hard"].items()
            )
            or "none"
        )
    )
    _plot_distributions(ctx, distributions)
    _plot_training(ctx, training)
    _plot_ratios(ctx, summary)
    return Outcome(
        metrics={
            "ratio_summary": summary,
            "results": table,
            "training": training,
            "rlaf_over_supervised_cdcl": rlaf_vs_supervised,
            "best_speedup": best_speedup,
            "hard_cdcl": hard,
        },
        claim_held=held,
        evidence={
            "rlaf_over_unguided_cdcl": verdict_ratios,
            "threshold": bound,
            "best_speedup": best_speedup,
            "rlaf_over_supervised_cdcl": rlaf_vs_supervised,
            "ratio_part_held": ratio_part,
            "degree_part_held": degree_part,
            "paired_over_formulas_cdcl": paired,
            "thresholds": {
                "margin": threshold(config, "margin"),
                "confidence": threshold(config, "confidence"),
                "degree_scale": threshold(config, "degree_scale"),
            },
        },
        measurement=measurement,
        notes=notes,
        timings=timings,
    )


def _plot_distributions(ctx: RunContext, distributions: dict[str, dict[str, dict[str, list[int]]]]) -> None:
    panels = [(f, n) for f, by_size in distributions.items() for n in by_size]
    fig, axes = figure(ncols=len(panels), width=3.6, height=3.4)
    axes = np.atleast_1d(axes).ravel()
    for ax, (family, n) in zip(axes, panels, strict=True):
        data = distributions[family][n]
        ax.boxplot([np.maximum(data[m], 1) for m in METHODS], showmeans=True)
        ax.set_xticks(range(1, len(METHODS) + 1), METHODS, rotation=20)
        ax.set_yscale("log")
        ax.set_title(f"{family}, {'your formulas' if n == 'data' else f'size {n}'} (CDCL)")
        ax.set_ylabel("decisions")
    ctx.save_plot(fig, "cost_distributions.png")


def _plot_training(ctx: RunContext, training: dict[str, Any]) -> None:
    fig, axes = figure(ncols=len(training), width=4.2, height=3.2)
    axes = np.atleast_1d(axes).ravel()
    for ax, (family, by_seed) in zip(axes, training.items(), strict=True):
        for name, hist in by_seed.items():
            ax.plot(hist["val_iteration"], hist["val_decisions"], marker="o", label=f"{name} val (mode)")
            ax.plot(
                range(1, len(hist["sampled_cost"]) + 1),
                hist["sampled_cost"],
                alpha=0.4,
                label=f"{name} train (sampled)",
            )
        ax.set_title(f"GRPO on {family}")
        ax.set_xlabel("iteration")
        ax.set_ylabel("mean decisions")
        ax.legend(fontsize=7)
    ctx.save_plot(fig, "training.png")


def _plot_ratios(ctx: RunContext, summary: dict[str, float]) -> None:
    keys = sorted({k.rsplit("/", 1)[0] for k in summary})
    fig, ax = figure(width=max(5.0, 0.55 * len(keys)), height=3.6)
    x = np.arange(len(keys))
    for offset, method in ((-0.27, "degree"), (0.0, "supervised"), (0.27, "rlaf")):
        ax.bar(x + offset, [summary[f"{k}/{method}"] for k in keys], width=0.27, label=method)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(x, keys, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("mean decisions / unguided")
    ax.set_title("guided / unguided mean decisions (mean over seeds)")
    ax.legend()
    ctx.save_plot(fig, "ratios.png")


EXPERIMENT = Experiment(config_cls=RLAFConfig, run=run)
