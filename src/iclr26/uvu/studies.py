"""The two studies of the reproduction: the NTK claim on a finite MDP and task rejection on GoToDoor.

1. :func:`ntk_study` — for growing width, trains (full-batch gradient descent, NTK parameterisation) ``K``
   independent TD value functions and ``K`` independent UVU models on the same partial data of a random finite MDP,
   and compares ``E[ε²]/2`` with the ensemble variance (and both with the infinite-width prediction of
   :mod:`iclr26.uvu.ntk`). The sampling noise of finite ``K`` is simulated from the infinite-width Gaussian, so the
   gap can be read against the gap a perfect agreement would still show.
2. :func:`rejection_study` — trains one offline universal Q-function on partial GoToDoor data, then UVU, ensembles
   of several sizes and RND to evaluate its policy, and scores each by the success-vs-rejection curve of the test
   tasks, the rank correlation with the true value error, parameters and counted multiply-adds
   (:mod:`iclr26.uvu.cost`); training times are measured beside them.

Units of work (:meth:`iclr26.common.experiment.RunContext.unit`; a killed run resumes after the last finished one):
``ntk-width<W>`` per width (ensemble and UVU copies trained), ``ntk-rnd-width<W>`` (RND at the largest width),
``rejection-policy`` (offline data, the shared Q-function and its evaluation roll-outs) and one
``rejection-<method>`` per uncertainty method (``UVU``, ``ensemble-<K>``, ``RND``). Everything between them is cheap
and seeded.

Glossary: ``M`` MDP points ``(s, a, z)``, ``N`` data points, ``K`` ensemble members / UVU copies, ``T`` test tasks,
``W`` hidden width, ``H`` UVU/RND heads.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from iclr26.common.experiment import RunContext
from iclr26.common.seeding import derive_seed, numpy_rng, torch_generator
from iclr26.uvu.cost import CountedCost, ensemble_cost, rnd_cost, uvu_cost
from iclr26.uvu.data import Transitions
from iclr26.uvu.ensemble import StackedNetworks, ValueEnsemble
from iclr26.uvu.gotodoor import NUM_ACTIONS, GoToDoorFamily, Task
from iclr26.uvu.mdp import FiniteMDP
from iclr26.uvu.model import UniversalMLP, count_parameters
from iclr26.uvu.ntk import relu_kernels, td_limit
from iclr26.uvu.offline import CQLConfig, DiscreteQNetwork, train_cql_dqn
from iclr26.uvu.rejection import (
    oracle_curve,
    paired_bootstrap_auc_difference,
    rank_correlation,
    rejection_curve,
    rejection_grid,
)
from iclr26.uvu.rnd import RND
from iclr26.uvu.training import fit
from iclr26.uvu.uvu import UVU

if TYPE_CHECKING:
    from iclr26.uvu.config import UVUConfig

#: Point classes of the NTK study: the whole future under the point's policy is in the data; the point is in the
#: data but part of its future is not; the point is not in the data.
COVERED, FUTURE_MISSING, NOT_IN_DATA = 0, 1, 2


def symmetric_gap(a: np.ndarray, b: np.ndarray) -> float:
    """``Σ|a - b| / (½ Σ (a + b))``: the relative L1 distance between two non-negative profiles."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"symmetric_gap needs two profiles of the same shape, got {a.shape} and {b.shape}")
    denom = 0.5 * float((a + b).sum())
    if denom <= 0:
        raise ValueError("symmetric_gap needs profiles with a positive total")
    return float(np.abs(a - b).sum() / denom)


def sampling_gap(
    covariance: np.ndarray, *, members: int, copies: int, repeats: int, rng: np.random.Generator
) -> np.ndarray:
    """Gaps :func:`symmetric_gap` that exact infinite-width agreement still shows with finitely many samples.

    Draws ``members`` ensemble values ``f ~ N(0, C)`` and ``copies`` UVU errors ``ε ~ N(0, 2C)`` (the limit law),
    ``repeats`` times, and returns the gap between ``½ mean ε²`` and the unbiased variance of ``f``: ``(repeats,)``.
    """
    vals, vecs = np.linalg.eigh(covariance)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))  # C = root rootᵀ
    m = covariance.shape[0]
    out = np.empty(repeats)
    for r in range(repeats):
        f = rng.standard_normal((members, m)) @ root.T  # (K, M)
        eps = math.sqrt(2.0) * rng.standard_normal((copies, m)) @ root.T  # (K, M)
        out[r] = symmetric_gap(0.5 * (eps**2).mean(0), f.var(0, ddof=1))
    return out


@dataclass(frozen=True)
class NTKStudy:
    """Results of :func:`ntk_study` (arrays over the ``M`` MDP points refer to the largest width).

    Attributes:
        widths: hidden widths trained.
        gap: per width, :func:`symmetric_gap` between ``½ mean_K ε²`` (UVU) and the ensemble variance.
        gap_uvu_theory: per width, gap between ``½ mean ε²`` and the infinite-width variance.
        gap_ensemble_theory: per width, gap between the ensemble variance and the infinite-width variance.
        mean_ratio: per width, ``Σ ½ mean ε² / Σ σ²_ens``.
        spearman: per width, rank correlation of ``ε²`` and ``σ²_ens`` over the points.
        residual: per width, the largest final |TD error| on the data (ensemble, UVU) — convergence check.
        noise_gap_mean: mean gap of exact agreement with ``K`` samples (simulated).
        noise_gap_quantile: its ``config.ntk_noise_quantile`` quantile (the tolerance of the verdict).
        steps: gradient-descent steps per width.
        theory: ``(M,)`` infinite-width ensemble variance.
        ensemble: ``(M,)`` measured ensemble variance; uvu_half: ``(M,)`` ``½ mean ε²``; rnd_half: ``(M,)``
            ``½ mean`` RND error (same width, γ-free).
        categories: ``(M,)`` 0 = future fully covered, 1 = in the data but future partly missing, 2 = not in data.
        q_true: ``(M,)`` closed-form ``Q^π``; ensemble_mean: ``(M,)`` measured ensemble mean.
    """

    widths: list[int]
    gap: list[float]
    gap_uvu_theory: list[float]
    gap_ensemble_theory: list[float]
    mean_ratio: list[float]
    spearman: list[float]
    residual: list[tuple[float, float]]
    noise_gap_mean: float
    noise_gap_quantile: float
    steps: int
    theory: np.ndarray
    ensemble: np.ndarray
    uvu_half: np.ndarray
    rnd_half: np.ndarray
    categories: np.ndarray
    q_true: np.ndarray
    ensemble_mean: np.ndarray


@dataclass(frozen=True)
class WidthResult:
    """One width of :func:`ntk_study` (a unit of work): arrays over the ``M`` MDP points.

    Attributes:
        ensemble_variance: ``(M,)`` variance of the ``K`` TD-trained value functions.
        uvu_half: ``(M,)`` ``½ mean ε²`` of the ``K`` UVU copies.
        ensemble_mean: ``(M,)`` mean of the value functions.
        residual: the largest final |TD error| on the data (ensemble, UVU).
    """

    ensemble_variance: np.ndarray
    uvu_half: np.ndarray
    ensemble_mean: np.ndarray
    residual: tuple[float, float]


def _residual(net: Callable, data: Transitions, rewards: torch.Tensor, gamma: float) -> float:
    """Largest |r + γ v(s', a') - v(s, a)| over the data and heads (``rewards`` broadcast to ``(N, heads)``)."""
    with torch.no_grad():
        v = net(data.states, data.actions, data.tasks)
        v_next = net(data.next_states, data.next_actions, data.tasks)
        return float((rewards + gamma * v_next - v).abs().max())


def ntk_study(config: UVUConfig, ctx: RunContext) -> NTKStudy:
    """Part 1: UVU error vs ensemble variance vs width on a random finite MDP (see the module docstring)."""
    dtype = torch.float64
    mdp = FiniteMDP.random(
        config.ntk_states, config.ntk_actions, config.ntk_policies, torch_generator(derive_seed(config.seed, "mdp"))
    )
    m = config.ntk_states * config.ntk_actions * config.ntk_policies
    n = max(2, round(config.ntk_coverage * m))
    data_idx = torch.randperm(m, generator=torch_generator(derive_seed(config.seed, "coverage")))[:n]
    successors = mdp.successors()
    device = ctx.device
    data = mdp.transitions(data_idx, dtype=dtype)
    states, actions, tasks = mdp.features(dtype)  # (M, ·) on the CPU, for the closed form
    on_device = data.to(device)
    queries = (states.to(device), actions.to(device), tasks.to(device))

    def make(width: int) -> Callable[[], UniversalMLP]:
        return lambda: UniversalMLP(
            mdp.num_states,
            mdp.num_policies,
            num_actions=mdp.num_actions,
            hidden=(width,),
            parameterization="ntk",
        ).to(device=device, dtype=dtype)

    x = make(1)().encode(states, actions, tasks)
    theory = td_limit(relu_kernels(x, depth=1), data_idx, successors[data_idx], data.rewards, gamma=config.ntk_gamma)
    eig = theory.operator_eigenvalues
    lam_max, lam_min = float(eig.abs().max()), float(eig.real.min())
    # GD on the mean TD loss moves f by (η/N) Θ δ: η = c N / λ_max contracts mode λ by (1 - c λ/λ_max) per step.
    lr = config.ntk_lr_factor * n / lam_max
    steps = min(
        config.ntk_max_steps,
        math.ceil(math.log(1.0 / config.ntk_residual) / (config.ntk_lr_factor * lam_min / lam_max)),
    )
    ctx.log(f"ntk: {m} points, {n} in data, A spectrum [{lam_min:.3g}, {lam_max:.3g}], {steps} GD steps")

    rng = numpy_rng(derive_seed(config.seed, "noise"))
    noise = sampling_gap(
        theory.covariance.numpy(),
        members=config.ntk_copies,
        copies=config.ntk_copies,
        repeats=config.ntk_noise_repeats,
        rng=rng,
    )
    theory_var = theory.ensemble_variance.numpy()

    def train_width(width: int) -> WidthResult:
        # full-batch GD: the minibatch generator is never drawn from
        gen = torch_generator(derive_seed(config.seed, "ntk-batches", width))
        torch.manual_seed(derive_seed(config.seed, "ntk-init", width))
        ensemble = ValueEnsemble(make(width), config.ntk_copies, gamma=config.ntk_gamma)
        fit(ensemble, on_device, steps=steps, lr=lr, generator=gen, optimizer="sgd", world=ctx.world)
        uvu = UVU(
            StackedNetworks(make(width), config.ntk_copies),
            StackedNetworks(make(width), config.ntk_copies),
            gamma=config.ntk_gamma,
        )
        fit(uvu, on_device, steps=steps, lr=lr, generator=gen, optimizer="sgd", world=ctx.world)
        with torch.no_grad():
            r_g = uvu.synthetic_reward(on_device)
            return WidthResult(
                ensemble_variance=ensemble.uncertainty(*queries).cpu().numpy(),
                uvu_half=0.5 * uvu.uncertainty(*queries).cpu().numpy(),
                ensemble_mean=ensemble.mean(*queries).cpu().numpy(),
                residual=(
                    _residual(ensemble, on_device, on_device.rewards[:, None], config.ntk_gamma),
                    _residual(uvu.online, on_device, r_g, config.ntk_gamma),
                ),
            )

    def train_rnd(width: int) -> np.ndarray:
        # RND: the γ = 0 regression onto g at the data points (myopic)
        torch.manual_seed(derive_seed(config.seed, "ntk-rnd-init", width))
        rnd = RND(StackedNetworks(make(width), config.ntk_copies), StackedNetworks(make(width), config.ntk_copies))
        gen = torch_generator(derive_seed(config.seed, "ntk-rnd-batches", width))
        fit(rnd, on_device, steps=steps, lr=lr, generator=gen, optimizer="sgd", world=ctx.world)
        with torch.no_grad():
            return 0.5 * rnd.uncertainty(*queries).cpu().numpy()

    out: dict[str, list] = {k: [] for k in ("gap", "gu", "ge", "ratio", "rho", "res")}
    for width in ctx.progress(config.ntk_widths, desc="ntk widths"):
        res = ctx.unit(f"ntk-width{width}", lambda width=width: train_width(width))
        ens_var, uvu_half, ens_mean = res.ensemble_variance, res.uvu_half, res.ensemble_mean
        out["res"].append(res.residual)
        out["gap"].append(symmetric_gap(uvu_half, ens_var))
        out["gu"].append(symmetric_gap(uvu_half, theory_var))
        out["ge"].append(symmetric_gap(ens_var, theory_var))
        out["ratio"].append(float(uvu_half.sum() / ens_var.sum()))
        out["rho"].append(rank_correlation(uvu_half, ens_var))
        ctx.log(
            f"ntk width {width}: gap {out['gap'][-1]:.3f} (noise {noise.mean():.3f}), "
            f"ratio {out['ratio'][-1]:.3f}, residuals {out['res'][-1][0]:.1e}/{out['res'][-1][1]:.1e}"
        )
    largest = config.ntk_widths[-1]
    rnd_half = ctx.unit(f"ntk-rnd-width{largest}", lambda: train_rnd(largest))
    closed = mdp.closed_points(data_idx)
    covered = torch.zeros(m, dtype=torch.bool)
    covered[data_idx] = True
    categories = torch.where(closed, COVERED, torch.where(covered, FUTURE_MISSING, NOT_IN_DATA)).numpy()
    return NTKStudy(
        widths=list(config.ntk_widths),
        gap=out["gap"],
        gap_uvu_theory=out["gu"],
        gap_ensemble_theory=out["ge"],
        mean_ratio=out["ratio"],
        spearman=out["rho"],
        residual=out["res"],
        noise_gap_mean=float(noise.mean()),
        noise_gap_quantile=float(np.quantile(noise, config.ntk_noise_quantile)),
        steps=steps,
        theory=theory_var,
        ensemble=ens_var,
        uvu_half=uvu_half,
        rnd_half=rnd_half,
        categories=categories,
        q_true=mdp.q_values(config.ntk_gamma).numpy(),
        ensemble_mean=ens_mean,
    )


@dataclass(frozen=True)
class MethodScore:
    """One uncertainty method on the task-rejection benchmark.

    Attributes:
        name: e.g. ``"UVU"``, ``"ensemble-10"``, ``"RND"``.
        uncertainty: ``(T,)`` its uncertainty at ``(s_0, π(s_0), z)`` of every test task.
        curve: success rate of accepted tasks per rejection fraction.
        auc: area under ``curve``.
        spearman: rank correlation of ``uncertainty`` with the true value error ``|Q̂ - Q^π|``.
        trained_params: parameters updated by training.
        total_params: all parameters, fixed random targets included.
        cost: counted multiply-adds per training transition and per query (:mod:`iclr26.uvu.cost`).
        train_time_s: time of its training loop on the study's ``time_basis`` (CPU time on a CPU device); varies
            between identical runs, so it is recorded as a timing and decides nothing.
        train_wall_time_s: wall time of its training loop (a timing as well).
    """

    name: str
    uncertainty: np.ndarray
    curve: np.ndarray
    auc: float
    spearman: float
    trained_params: int
    total_params: int
    cost: CountedCost
    train_time_s: float
    train_wall_time_s: float


@dataclass(frozen=True)
class PolicyEvaluation:
    """The shared offline policy and its test tasks (the unit ``rejection-policy``); tensors on the CPU.

    Attributes:
        data: the offline transitions, ``next_actions`` relabelled with the learned greedy policy ``π``.
        state_dim: ``D_s``; task_dim: ``D_z``.
        states0: ``(T, D_s)`` start states of the test tasks; tasks0: ``(T, D_z)`` their codes;
            actions0: ``(T,)`` ``π(s_0)``.
        group_names: names of the test groups; groups: ``(T,)`` group index of each test task.
        success: ``(T,)`` success of ``π``; value_error: ``(T,)`` ``|Q̂(s_0, a_0, z) - Q^π|``.
        dqn_time_s: training wall time of the shared Q-function (a timing).
    """

    data: Transitions
    state_dim: int
    task_dim: int
    states0: torch.Tensor
    tasks0: torch.Tensor
    actions0: torch.Tensor
    group_names: list[str]
    groups: np.ndarray
    success: np.ndarray
    value_error: np.ndarray
    dqn_time_s: float


@dataclass(frozen=True)
class RejectionStudy:
    """Results of :func:`rejection_study`.

    Attributes:
        fractions: rejection fractions of the curves.
        methods: every method's :class:`MethodScore` (UVU first, then ensembles by size, then RND).
        oracle_curve: the best achievable curve; oracle_auc: its area.
        base_success: success rate with nothing rejected (a random ranking's expected curve level).
        group_names: names of the test groups; groups: ``(T,)`` group index of each test task.
        success: ``(T,)`` success of the shared policy; value_error: ``(T,)`` ``|Q̂(s_0, a_0, z) - Q^π|``.
        transitions: size of the offline data set.
        auc_difference_ci: 5 % and 95 % bootstrap quantiles of ``AUC(UVU) - AUC(largest ensemble)``.
        dqn_time_s: training wall time of the shared Q-function (a timing).
        time_basis: what ``MethodScore.train_time_s`` measures: ``"process CPU time"`` on a CPU device (robust to
            other jobs on a shared machine), ``"wall time"`` on CUDA (CPU time does not see GPU work).
    """

    fractions: np.ndarray
    methods: list[MethodScore]
    oracle_curve: np.ndarray
    oracle_auc: float
    base_success: float
    group_names: list[str]
    groups: np.ndarray
    success: np.ndarray
    value_error: np.ndarray
    transitions: int
    auc_difference_ci: tuple[float, float]
    dqn_time_s: float
    time_basis: str


def held_out(task: Task) -> bool:
    """The colour/wall combinations never targeted in the data: colour ``c`` on wall ``(c + 1) mod 4``."""
    return task.target_wall == (task.target_color + 1) % 4


def episodes_to_transitions(episodes: list, task_dim: int, device: torch.device) -> Transitions:
    """The offline transitions of ``episodes`` (checked on the CPU, then moved to ``device``); ``next_actions`` are
    the logged actions until relabelled with the learned policy."""
    actions = torch.from_numpy(np.concatenate([e.actions for e in episodes]))
    codes = torch.tensor(np.concatenate([np.full(len(e.actions), e.task) for e in episodes]))
    return Transitions(
        states=torch.from_numpy(np.concatenate([e.states for e in episodes])),
        actions=actions,
        rewards=torch.from_numpy(np.concatenate([e.rewards for e in episodes])),
        next_states=torch.from_numpy(np.concatenate([e.next_states for e in episodes])),
        next_actions=actions.clone(),
        dones=torch.from_numpy(np.concatenate([e.dones for e in episodes])),
        tasks=F.one_hot(codes, task_dim).float(),
    ).to(device)


def _seed(config: UVUConfig, replicate: int, *keys: int | str) -> int:
    """The seed of one random draw of the rejection study's replicate ``replicate``: replicate 0 draws from the
    master seed and ``keys`` alone; replicate ``j > 0`` draws its own tasks, data, initial weights and batches."""
    if replicate == 0:
        return derive_seed(config.seed, *keys)
    return derive_seed(config.seed, *keys, "replicate", replicate)


def _train_policy(config: UVUConfig, ctx: RunContext, replicate: int = 0) -> PolicyEvaluation:
    """Collect the offline data, train the shared Q-function, relabel ``a'`` with its policy, roll it out on the
    test tasks; the result is moved to the CPU (a unit's result holds no device tensors)."""
    device = ctx.device
    family = GoToDoorFamily(config.grid_size)
    base = _seed(config, replicate, "gotodoor-tasks") % 1_000_000_000
    seen: list[Task] = []
    unseen: list[Task] = []
    need_seen = config.train_tasks + config.truncated_tasks + config.test_per_group
    i = 0
    while len(seen) < need_seen or len(unseen) < config.test_per_group:
        task = family.reset(base + i)
        (unseen if held_out(task) else seen).append(task)
        i += 1
    train = seen[: config.train_tasks]
    truncated = seen[config.train_tasks : config.train_tasks + config.truncated_tasks]
    fresh = seen[config.train_tasks + config.truncated_tasks : need_seen]
    held = unseen[: config.test_per_group]

    rng = numpy_rng(_seed(config, replicate, "gotodoor-data"))
    episodes = []
    for task in ctx.progress(train + truncated, desc="collect data"):
        for _ in range(config.episodes_per_task):
            cut = int(rng.integers(1, config.truncate_max + 1)) if task in truncated else None
            episodes.append(family.collect(task, epsilon=config.epsilon, max_steps=cut, rng=rng))
    data = episodes_to_transitions(episodes, family.task_dim, device)
    ctx.log(f"gotodoor: {len(data)} transitions from {len(train)} full + {len(truncated)} truncated tasks")

    torch.manual_seed(_seed(config, replicate, "dqn-init"))
    q = DiscreteQNetwork(family.state_dim, family.task_dim, NUM_ACTIONS, hidden=config.dqn_hidden).to(device)
    cql = CQLConfig(
        steps=config.dqn_steps,
        batch_size=config.batch_size,
        lr=config.lr,
        gamma=config.gamma,
        alpha=config.cql_alpha,
        target_every=config.target_every,
    )
    start = time.perf_counter()
    train_cql_dqn(
        q,
        data,
        cql,
        torch_generator(_seed(config, replicate, "dqn")),
        progress=lambda it: ctx.progress(it, total=cql.steps, desc="offline Q"),
        world=ctx.world,
    )
    dqn_time = time.perf_counter() - start
    data = data.with_next_actions(q.greedy(data.next_states, data.tasks))

    groups_tasks = [train[: config.test_per_group], truncated[: config.test_per_group], fresh, held]
    test = [t for g in groups_tasks for t in g]
    s0 = []
    for task in test:
        family.reset(task.seed)
        s0.append(family.features(task))
    states0 = torch.from_numpy(np.stack(s0)).to(device)
    tasks0 = torch.stack([torch.from_numpy(family.task_code(t)) for t in test]).to(device)
    actions0 = q.greedy(states0, tasks0)
    with torch.no_grad():
        q_hat = q(states0, tasks0).gather(1, actions0[:, None])[:, 0].cpu().numpy()

    def policy(features: np.ndarray, code: np.ndarray) -> int:
        s = torch.from_numpy(features)[None].to(device)
        return int(q.greedy(s, torch.from_numpy(code)[None].to(device))[0])

    outcomes = [family.rollout(t, policy, gamma=config.gamma) for t in ctx.progress(test, desc="evaluate policy")]
    return PolicyEvaluation(
        data=data.to("cpu"),
        state_dim=family.state_dim,
        task_dim=family.task_dim,
        states0=states0.cpu(),
        tasks0=tasks0.cpu(),
        actions0=actions0.cpu(),
        group_names=["seen", "truncated", "new", "held-out"],
        groups=np.concatenate([np.full(len(g), k) for k, g in enumerate(groups_tasks)]),
        success=np.array([o.success for o in outcomes], dtype=np.float64),
        value_error=np.abs(q_hat - np.array([o.discounted_return for o in outcomes])),
        dqn_time_s=dqn_time,
    )


def rejection_study(config: UVUConfig, ctx: RunContext, replicate: int = 0) -> RejectionStudy:
    """Part 2: multi-task offline GoToDoor with task rejection (see the module docstring), replicate ``replicate``
    (its own tasks, data, shared Q-function, initial weights and batches; see :func:`_seed`).

    Units: ``seed<j>-rejection-policy``, then ``seed<j>-rejection-<method>`` for UVU, each ensemble size and RND.
    """
    device = ctx.device
    on_cpu = device.type == "cpu"
    pol = ctx.unit(f"seed{replicate}-rejection-policy", lambda: _train_policy(config, ctx, replicate))
    data = pol.data.to(device)
    states0, actions0, tasks0 = pol.states0.to(device), pol.actions0.to(device), pol.tasks0.to(device)
    success = pol.success
    fractions = rejection_grid(config.rejection_max, config.rejection_points)

    def make(heads: int) -> Callable[[], UniversalMLP]:
        return lambda: UniversalMLP(
            pol.state_dim, pol.task_dim, num_actions=NUM_ACTIONS, hidden=config.pe_hidden, num_heads=heads
        ).to(device)

    def build(name: str) -> tuple[torch.nn.Module, int, int, CountedCost]:
        """The learner ``name`` freshly initialised from its own seed, its parameter counts and counted cost."""
        if name == "UVU":
            torch.manual_seed(_seed(config, replicate, "uvu-init"))
            uvu = UVU(make(config.uvu_heads)(), make(config.uvu_heads)(), gamma=config.gamma)
            cost = uvu_cost(uvu.online.widths)
            return uvu, count_parameters(uvu, trainable_only=True), count_parameters(uvu), cost
        if name == "RND":
            torch.manual_seed(_seed(config, replicate, "rnd-init"))
            rnd = RND(make(config.uvu_heads)(), make(config.uvu_heads)())
            cost = rnd_cost(rnd.predictor.widths)
            return rnd, count_parameters(rnd, trainable_only=True), count_parameters(rnd), cost
        k = int(name.removeprefix("ensemble-"))
        torch.manual_seed(_seed(config, replicate, "ensemble-init", k))
        ens = ValueEnsemble(make(1), k, gamma=config.gamma)
        cost = ensemble_cost(make(1)().widths, k)
        return ens, count_parameters(ens), count_parameters(ens), cost

    def train(name: str) -> MethodScore:
        model, trained, total, cost = build(name)
        result = fit(
            model,
            data,
            steps=config.pe_steps,
            lr=config.lr,
            batch_size=config.batch_size,
            generator=torch_generator(_seed(config, replicate, "pe-batches", name)),
            progress=lambda it: ctx.progress(it, total=config.pe_steps, desc=name),
            world=ctx.world,
        )
        with torch.no_grad():
            unc = model.uncertainty(states0, actions0, tasks0).cpu().numpy().astype(np.float64)
        curve = rejection_curve(unc, success, fractions)
        return MethodScore(
            name=name,
            uncertainty=unc,
            curve=curve.success,
            auc=curve.auc,
            spearman=rank_correlation(unc, pol.value_error),
            trained_params=trained,
            total_params=total,
            cost=cost,
            train_time_s=result.cpu_time_s if on_cpu else result.wall_time_s,
            train_wall_time_s=result.wall_time_s,
        )

    methods = []
    for name in ["UVU", *(f"ensemble-{k}" for k in config.ensemble_sizes), "RND"]:
        score = ctx.unit(f"seed{replicate}-rejection-{name}", lambda name=name: train(name))
        methods.append(score)
        ctx.log(
            f"{name}: AUC {score.auc:.3f}, spearman {score.spearman:.3f}, {score.total_params} params, "
            f"{score.cost.update_macs} MACs per update, {score.train_wall_time_s:.1f} s wall"
        )
    largest = next(mm for mm in methods if mm.name == f"ensemble-{max(config.ensemble_sizes)}")
    diffs = paired_bootstrap_auc_difference(
        methods[0].uncertainty,
        largest.uncertainty,
        success,
        fractions,
        resamples=config.bootstrap,
        rng=numpy_rng(_seed(config, replicate, "bootstrap")),
    )
    oracle = oracle_curve(success, fractions)
    return RejectionStudy(
        fractions=fractions,
        methods=methods,
        oracle_curve=oracle.success,
        oracle_auc=oracle.auc,
        base_success=float(success.mean()),
        group_names=pol.group_names,
        groups=pol.groups,
        success=success,
        value_error=pol.value_error,
        transitions=len(data),
        auc_difference_ci=(float(np.quantile(diffs, 0.05)), float(np.quantile(diffs, 0.95))),
        dqn_time_s=pol.dqn_time_s,
        time_basis="process CPU time" if on_cpu else "wall time",
    )
