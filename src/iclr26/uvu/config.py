"""The config of the UVU reproduction (``iclr26 run uvu``): the NTK study, the GoToDoor rejection study, the verdict's
thresholds and the presets.

Defaults are the ``cpu`` scale; ``SCALES`` holds ``smoke`` and ``gpu``. Every field states its source; the paper's
exact environment settings and hyperparameters could not be read, so most values are ours and say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from iclr26.common.config import ExperimentConfig, opt, require
from iclr26.common.device import resolve_device

_NOT_IN_PAPER = "not in the paper; chosen"
#: Widest hidden layer, most copies and most MDP points a field accepts: the NTK study trains ``ntk_copies`` networks
#: of every width on every point at once, so their product bounds its memory.
MAX_WIDTH = 65_536
MAX_COPIES = 4096
MAX_MDP_SIZE = 4096
#: Largest minibatch: 2^20 transitions of GoToDoor features and their activations at the widest hidden layer fit in
#: a few GB (float32); the offline data of the gpu preset hold a few tens of thousands of transitions.
MAX_BATCH = 2**20
#: Most gradient steps of any learner (the gpu preset takes 20,000).
MAX_STEPS = 10**7
#: Most tasks of any group: each is a minigrid episode collected or rolled out one at a time on the CPU.
MAX_TASKS = 10**6


@dataclass(frozen=True)
class UVUConfig(ExperimentConfig):
    """The UVU reproduction; defaults are the ``cpu`` scale (a few minutes of one thread)."""

    # ---- part 1: NTK check on a finite MDP
    ntk_states: int = opt(
        8, f"states of the random MDP ({_NOT_IN_PAPER} small enough for many wide networks on a CPU)", ge=1,
        le=MAX_MDP_SIZE,
    )  # fmt: skip
    ntk_actions: int = opt(2, f"actions of the random MDP ({_NOT_IN_PAPER})", ge=1, le=MAX_MDP_SIZE)
    ntk_policies: int = opt(3, f"deterministic policies z ({_NOT_IN_PAPER})", ge=1, le=MAX_MDP_SIZE)
    ntk_gamma: float = opt(
        0.5,
        f"discount of the MDP study ({_NOT_IN_PAPER}: keeps the TD operator well conditioned, so GD converges)",
        ge=0,
        lt=1,
    )
    ntk_coverage: float = opt(0.5, f"fraction of the (s, a, z) points in the data ({_NOT_IN_PAPER})", gt=0, le=1)
    ntk_widths: tuple[int, ...] = opt(
        (16, 64, 256, 1024),
        f"hidden widths of the one-hidden-layer NTK-parameterised networks, increasing ({_NOT_IN_PAPER})",
        ge=1,
        le=MAX_WIDTH,
    )
    ntk_copies: int = opt(
        48,
        f"ensemble members K, and independent UVU copies, per width ({_NOT_IN_PAPER}; sets the sampling noise)",
        ge=2,
        le=MAX_COPIES,
    )
    ntk_lr_factor: float = opt(
        0.5, f"GD learning rate as a fraction of the stable N/λ_max(A) ({_NOT_IN_PAPER})", gt=0, lt=1
    )
    ntk_residual: float = opt(
        1e-3, f"GD runs until the slowest TD mode shrinks by this factor ({_NOT_IN_PAPER})", gt=0, lt=1
    )
    ntk_max_steps: int = opt(1500, f"cap on GD steps per width ({_NOT_IN_PAPER})", ge=1, le=MAX_STEPS)
    ntk_noise_repeats: int = opt(200, f"simulations of the finite-K sampling gap ({_NOT_IN_PAPER})", ge=1, le=10**6)
    ntk_noise_quantile: float = opt(
        0.95,
        "tolerance of the NTK verdict: the measured gap at the largest width must not exceed this quantile of the "
        "simulated gap of exact agreement (not in the paper; the conventional 5% level)",
        gt=0,
        lt=1,
    )
    ntk_width_exponent: float = opt(
        0.5,
        "rate in width at which the NTK gap's excess over sampling noise must at least fall: finite-width networks "
        "in NTK parameterisation deviate from their infinite-width training dynamics by O(width^-1/2) (Lee et al. "
        "2019, arXiv 1902.06720, Thm 2.1); the gap at width w must not exceed the noise quantile + (gap at the "
        "smallest width w0 - mean noise gap) * (w0 / w)^exponent",
        gt=0,
        le=10,
    )
    ntk_value_tolerance: float = opt(
        0.05,
        "gate of the NTK study: at the largest width the ensemble's mean on the points whose whole future is in the "
        "data must be within this fraction of the mean |Q^π| there (the limit recovers Q^π exactly on them, paper "
        "§4; not in the paper: GD runs until the slowest TD mode shrinks by ntk_residual = 1e-3, so a converged "
        "ensemble is far inside 5%, and an ensemble that has not learned the values is far outside)",
        gt=0,
        le=1,
    )
    # ---- part 2: GoToDoor task rejection
    rejection_seeds: int = opt(
        3,
        "independent replicates of the rejection study (own tasks, data, shared Q-function, initial weights and "
        "batches); the verdict rests on their mean (at least 3 for a Student-t bound with some power)",
        ge=2,
        le=1000,
    )
    confidence: float = opt(
        0.95,
        "confidence of the one-sided Student-t bounds over replicates: AUC(UVU) - AUC(largest ensemble) and "
        "AUC(RND) - AUC(largest ensemble) against -auc_tolerance, AUC(largest ensemble) - base success against "
        "auc_tolerance (the conventional 95%); the two-sided interval at the same level is reported",
        gt=0,
        lt=1,
    )
    grid_size: int = opt(
        7, "GoToDoorEnv size (rooms 5..size; the paper's exact environment settings could not be read)", ge=5, le=64
    )
    gamma: float = opt(0.9, f"discount of the GoToDoor study ({_NOT_IN_PAPER})", ge=0, lt=1)
    train_tasks: int = opt(
        300, f"tasks with complete noisy-expert episodes in the data ({_NOT_IN_PAPER})", ge=1, le=MAX_TASKS
    )
    truncated_tasks: int = opt(
        100,
        f"tasks whose episodes are cut after 1..truncate_max steps: start covered, future missing ({_NOT_IN_PAPER})",
        ge=1,
        le=MAX_TASKS,
    )
    episodes_per_task: int = opt(2, f"episodes logged per data task ({_NOT_IN_PAPER})", ge=1, le=1000)
    epsilon: float = opt(
        0.2, f"probability of a uniformly random action in the behaviour policy ({_NOT_IN_PAPER})", ge=0, le=1
    )
    truncate_max: int = opt(2, f"longest cut-off episode ({_NOT_IN_PAPER})", ge=1, le=1000)
    test_per_group: int = opt(
        50, f"test tasks per group (seen, truncated, new, held-out colour/wall) ({_NOT_IN_PAPER})", ge=1, le=MAX_TASKS
    )
    dqn_hidden: tuple[int, ...] = opt(
        (256, 256), f"hidden widths of the shared offline Q-network ({_NOT_IN_PAPER})", ge=1, le=MAX_WIDTH
    )
    dqn_steps: int = opt(4000, f"offline Q-learning steps ({_NOT_IN_PAPER})", ge=1, le=MAX_STEPS)
    cql_alpha: float = opt(0.5, f"CQL regulariser weight α ({_NOT_IN_PAPER})", ge=0, le=100)
    target_every: int = opt(
        200, f"steps between target-network updates of the offline Q-learner ({_NOT_IN_PAPER})", ge=1, le=MAX_STEPS
    )
    pe_hidden: tuple[int, ...] = opt(
        (128, 128),
        f"hidden widths of every uncertainty network: u, g, ensemble members, RND ({_NOT_IN_PAPER})",
        ge=1,
        le=MAX_WIDTH,
    )
    pe_steps: int = opt(
        2000, f"training steps of each uncertainty method ({_NOT_IN_PAPER}; sized for the cpu budget)", ge=1,
        le=MAX_STEPS,
    )  # fmt: skip
    lr: float = opt(1e-3, f"Adam learning rate of every learner ({_NOT_IN_PAPER})", gt=0, le=1)
    batch_size: int = opt(256, f"minibatch size ({_NOT_IN_PAPER})", ge=1, le=MAX_BATCH)
    uvu_heads: int = opt(
        8,
        "output heads of UVU and RND (independent u/g pairs, averaged; the paper's head count could not be read)",
        ge=1,
        le=1024,
    )
    ensemble_sizes: tuple[int, ...] = opt(
        (2, 10),
        "ensemble sizes compared; the largest is the reference (the paper compares several sizes; its exact sizes "
        "could not be read)",
        ge=2,
        le=1024,
    )
    rejection_max: float = opt(0.9, f"largest rejected fraction on the curve ({_NOT_IN_PAPER})", ge=0, lt=1)
    rejection_points: int = opt(19, f"points of the rejection grid ({_NOT_IN_PAPER})", ge=2, le=10_000)
    bootstrap: int = opt(500, f"bootstrap resamples of the AUC difference ({_NOT_IN_PAPER})", ge=1, le=10**6)
    auc_tolerance: float = opt(
        0.03,
        "UVU 'matches' the largest ensemble if its AUC is at most this much lower (not in the paper; about one "
        "binomial standard error of a success rate over the cpu scale's 200 test tasks, sqrt(0.25 * 0.75 / 200) = "
        "0.031); RND, the myopic control, must fall short by more, and the ensemble must beat random rejection by "
        "more (else a random ranking would match it)",
        ge=0,
        le=1,
    )
    max_compute_fraction: float = opt(
        0.5,
        "'a fraction of the compute': UVU's parameters and counted training multiply-adds per transition at most "
        "this share of the largest ensemble's (not in the paper, whose own figure could not be read; 'a fraction' "
        "read as at most half)",
        gt=0,
        le=1,
    )
    device: str = opt(
        "cpu",
        "torch device of every network and batch of both studies: cpu, cuda or cuda:N (gpu preset: cuda); the "
        "environment and its roll-outs run on the CPU",
    )

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "rejection_seeds": 2,
            "ntk_widths": (8, 32),
            "ntk_copies": 6,
            "ntk_max_steps": 60,
            "ntk_noise_repeats": 10,
            "train_tasks": 12,
            "truncated_tasks": 4,
            "test_per_group": 4,
            "dqn_steps": 40,
            "pe_steps": 30,
            "batch_size": 64,
            "pe_hidden": (32, 32),
            "dqn_hidden": (32, 32),
            "uvu_heads": 2,
            "ensemble_sizes": (2, 3),
            "bootstrap": 10,
            "target_every": 10,
        },
        "gpu": {
            "ntk_widths": (16, 64, 256, 1024, 4096),
            "ntk_copies": 128,
            "ntk_max_steps": 4000,
            "train_tasks": 1000,
            "truncated_tasks": 300,
            "test_per_group": 150,
            "dqn_steps": 20000,
            "pe_steps": 20000,
            "pe_hidden": (256, 256),
            "ensemble_sizes": (2, 5, 10, 20),
            "rejection_seeds": 5,
            "uvu_heads": 16,
            "device": "cuda",
        },
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            len(self.ntk_widths) >= 2 and list(self.ntk_widths) == sorted(set(self.ntk_widths)),
            "ntk_widths",
            f"must be >= 2 strictly increasing widths, got {self.ntk_widths}",
        )
        require(
            self.train_tasks >= self.test_per_group,
            "train_tasks",
            f"must be >= test_per_group ({self.test_per_group}) to draw the 'seen' test group",
        )
        require(
            self.truncated_tasks >= self.test_per_group,
            "truncated_tasks",
            f"must be >= test_per_group ({self.test_per_group}) to draw the 'truncated' test group",
        )
        for name in ("dqn_hidden", "pe_hidden", "ensemble_sizes"):
            require(len(getattr(self, name)) >= 1, name, "must hold at least one value")
        require(
            len(set(self.ensemble_sizes)) == len(self.ensemble_sizes),
            "ensemble_sizes",
            f"must not repeat, got {self.ensemble_sizes}",
        )
        require(
            self.device == "cpu" or self.device.startswith("cuda"),
            "device",
            f"must be 'cpu' or 'cuda[:i]', got {self.device!r}",
        )
        resolve_device(self.device)  # CUDA asked for on a machine without it: the same error as every module

    @property
    def reference(self) -> str:
        """The method UVU is judged against: the largest ensemble."""
        return f"ensemble-{max(self.ensemble_sizes)}"
