"""Reproduction of LAMIR (Kubíček & Lisý, ICLR 2026, arXiv 2510.05048) on imperfect-information Goofspiel.

What one run does:

1. tabulate II-Goofspiel (descending point cards, so no chance; win/loss returns) from OpenSpiel;
2. train, on shared batches, the base agent (π_θ by NeuRD + RNaD regularisation, τ_θ) and LAMIR models: one
   with κ = own action history at a capacity ``L`` that can be one-to-one (claim 1), and a capacity sweep of
   models with limited ``L`` (claim 2);
3. compute every agent's exploitability with OpenSpiel: the base policy, continual resolving with the true model
   (depth 1 with exact multi-valued leaf values of the same transformations; and full depth), and LAMIR's
   continual resolving on each learned model (depth 1, CFR+ on the merged subgame);
4. measure how exactly each learned model matches the game (abstraction one-to-one, dynamics, values);
5. head-to-head: LAMIR's ``pyspiel.Bot`` against the base policy's bot in sampled games (both seats, 95% CI),
   and the exact expected score; and an ablation: the true game's depth-1 search with v_θ's values at the
   leaves (isolates the value function's error from the abstraction's and the dynamics');
   the control: the same search on a limited-capacity model that never trained (exploitability, exact score,
   accuracy);
6. Kuhn and Leduc poker: continual resolving with the true model (exact checks of the search machinery; Leduc
   has a chance node between public states).

Steps 2-5 run for ``seeds`` independent replicates (own initial weights, episodes and match games); step 6 once.
"The pre-trained agent" is, in every replicate, the second-half checkpoint with the median exploitability
(:func:`select_base_checkpoint`, a rule fixed in advance), not the last iterate. The verdict over the replicates is
:func:`iclr26.lamir.verdict.verdict`; it rests on exact, seeded quantities (OpenSpiel's exploitability, exact expected
scores, model accuracy on every history); CPU times go to the record's timings only.

Units of work (``iclr26 run lamir --resume RUN_DIR`` skips the finished ones), per replicate ``j``:
``seed<j>-train-<from>-<to>`` per ``unit_steps`` training steps (each returns every learner's parameters, optimiser
moments, the episode generator's state and the base policy's checkpoint tables; the next one continues from them),
``seed<j>-eval-true-model``, ``seed<j>-eval-<model>`` per learned model (``exact``, ``L<capacity>``),
``seed<j>-eval-untrained``; then ``eval-poker``.

Deviations (each with its reason in the README): II-Goofspiel 4 instead of 5-15; uniformly random episodes for the
abstraction and dynamics; value episodes that switch from random play to a transformed-policy pair; annealed
clustering softness; ``L = 24`` (twice the one-to-one size) for claim 1; an RNaD-lite base agent; 3 replicates.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, numpy_rng
from iclr26.lamir.config import LamirConfig
from iclr26.lamir.features import GameFeatures, Kappa
from iclr26.lamir.games import GameTree
from iclr26.lamir.learners import AbstractModelLearner, BaseAgentLearner, BaseAgentSettings, ModelSettings
from iclr26.lamir.training import TrainingState
from iclr26.lamir.verdict import Measurements, verdict

NOTES = (
    "Replicates of the master seed (each its own initial weights and episodes); intervals are two-sided Student-t "
    "over replicates at interval_level. Exploitability = NashConv/2 from OpenSpiel. The base policy each search is "
    "compared with is, by a rule fixed in advance, the checkpoint of the second half of training with the median "
    "exploitability (lower median), not the last iterate. Claim 1 needs the abstraction one-to-one and the dynamics "
    "exact in every replicate and the search less exploitable than that base policy on the mean (its tolerance: the "
    "base policy's own gap to the true-model depth-1 search); claim 2 needs the limited-capacity search less "
    "exploitable than the base policy and its exact expected score above min_score_vs_base, both on the interval of "
    "the mean; the same rule on an untrained model of the limited capacity (the control) must fail. Gates: true-model "
    "full-depth search near Nash, true-model depth-1 search better than the base policy, both learned models more "
    "accurate than the untrained one, capacities on either side of the one-to-one size."
)


def run(config: LamirConfig, ctx: RunContext) -> Outcome:
    """Steps 1-6 of the module docstring for every replicate, in units of work: ``seed<j>-train-<from>-<to>``
    (``unit_steps`` training steps each), ``seed<j>-eval-true-model``, ``seed<j>-eval-<model>`` per learned model,
    ``seed<j>-eval-untrained`` (the control), and ``eval-poker`` once; then the verdict over the replicates."""
    from iclr26.lamir.features import game_features
    from iclr26.lamir.games import goofspiel_game, tabulate_game

    torch.set_num_threads(1)  # tiny networks: one thread is fastest and avoids oversubscription on shared cores
    t_start = time.process_time()
    game = goofspiel_game(config.num_cards)
    tree = tabulate_game(game)
    feats = game_features(tree)
    one_to_one_size = tree.max_infosets_per_public_state()
    ctx.log(
        f"{tree.name}: {tree.num_nodes} nodes, {tree.num_public_states} public states, "
        f"at most {one_to_one_size} infosets per public state"
    )
    replicates = []
    last_state: TrainingState | None = None
    train_cpu = 0.0
    for j in range(config.seeds):
        setup = _Setup(config, game, tree, feats, replicate=j)
        result, state, base_curve = _run_replicate(setup, ctx)
        train_cpu += result.pop("train_cpu_s")
        replicates.append((result, base_curve))
        last_state = state
    assert last_state is not None

    # 6. Kuhn and Leduc poker, true model (no learning: once per run)
    poker = ctx.unit("eval-poker", lambda: _evaluate_poker(config))
    ctx.log(f"true-model continual resolving: Kuhn {poker['kuhn_poker']:.4f}, Leduc {poker['leduc_poker']:.4f}")

    check = verdict(measurements(config, [r for r, _ in replicates], one_to_one_size), config)
    first = replicates[0][0]
    _plot_capacity(ctx, config, first, one_to_one_size)
    _plot_training(ctx, [c for _, c in replicates], [r["base_step"] for r, _ in replicates], last_state.curves)
    metrics = {
        "game": {
            "name": tree.name,
            "nodes": tree.num_nodes,
            "public_states": tree.num_public_states,
            "max_infosets_per_public_state": one_to_one_size,
        },
        "replicates": [{**r, "base_exploitability_curve": c} for r, c in replicates],
        "kuhn_true_model_exploitability": poker["kuhn_poker"],
        "leduc_true_model_exploitability": poker["leduc_poker"],
        "final_losses_last_replicate": {k: v[-1][1] for k, v in last_state.curves.items()},
    }
    timings = {"train_cpu_s": train_cpu, "total_cpu_s": time.process_time() - t_start}
    return Outcome.of(check, metrics=metrics, timings=timings, notes=NOTES)


def measurements(config: LamirConfig, replicates: list[dict[str, Any]], one_to_one_size: int) -> Measurements:
    """The verdict's plain numbers from the replicates' results (:func:`_run_replicate`)."""
    exact = [r["models"]["exact"] for r in replicates]
    limited = [r["models"][f"L{config.limited_capacity}"] for r in replicates]
    untrained = [r["untrained_control"] for r in replicates]
    models = {"exact": exact, "limited": limited, "untrained": untrained}
    return Measurements(
        seeds=[r["seed"] for r in replicates],
        one_to_one_size=one_to_one_size,
        base=[r["base_exploitability"] for r in replicates],
        last_iterate=[r["last_iterate_exploitability"] for r in replicates],
        true_depth1=[r["true_model_depth1_exploitability"] for r in replicates],
        true_full=[r["true_model_full_exploitability"] for r in replicates],
        exact_search=[m["exploitability"] for m in exact],
        exact_abstraction=[bool(m["accuracy"]["exact_abstraction"]) for m in exact],
        exact_dynamics=[bool(m["accuracy"]["dynamics_exact"]) for m in exact],
        limited_search=[m["exploitability"] for m in limited],
        limited_score=[m["exact_score_vs_base"] for m in limited],
        limited_match_score=[m["match_vs_base"]["score"] for m in limited],
        untrained_search=[m["exploitability"] for m in untrained],
        untrained_score=[m["exact_score_vs_base"] for m in untrained],
        reward_mae={k: [m["accuracy"]["reward_mae"] for m in v] for k, v in models.items()},
        legal_accuracy={k: [m["accuracy"]["legal_accuracy"] for m in v] for k, v in models.items()},
        limited_match_ci95=[m["match_vs_base"]["ci95"] for m in limited],
    )


def select_base_checkpoint(checkpoints: list[tuple[int, float]], train_steps: int) -> tuple[int, float]:
    """The base policy a search is compared with, by a rule fixed before any result.

    Among the checkpoints ``(step, exploitability)`` of the second half of training (``step >= train_steps // 2``;
    the last one is the final policy), the one with the median exploitability; for an even count the lower median
    (the less exploitable of the two middle ones), ties broken by the earlier step. The last iterate alone is a
    draw from a curve that oscillates (in a previous record it was the most exploitable of its second half).

    Raises:
        ValueError: if no checkpoint lies in the second half.
    """
    late = sorted(((e, s) for s, e in checkpoints if s >= train_steps // 2))
    if not late:
        raise ValueError(f"no checkpoint at or after step {train_steps // 2} of {train_steps}")
    exploitability, step = late[(len(late) - 1) // 2]
    return step, exploitability


def _run_replicate(setup: _Setup, ctx: RunContext) -> tuple[dict[str, Any], TrainingState, list]:
    """Steps 2-5 for one replicate: train, select the base checkpoint, evaluate the true model and every model."""
    config, j = setup.config, setup.replicate
    prefix = f"seed{j}-"
    bar = ctx.progress(total=config.train_steps, desc=f"train seed {j}")
    state: TrainingState | None = None
    base_curve: list[tuple[int, float]] = []
    checkpoints: dict[int, tuple[np.ndarray, ...]] = {}
    bounds = [*range(0, config.train_steps, config.unit_steps), config.train_steps]
    t_train = time.process_time()
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        piece = ctx.unit(f"{prefix}train-{lo}-{hi}", lambda start=state, hi=hi: _train_piece(setup, start, hi, bar))
        state, base_curve = piece.state, base_curve + piece.base_curve
        checkpoints.update(piece.tables)
        bar.update(hi - bar.n)
    bar.close()
    assert state is not None  # train_steps >= 1 gives at least one unit
    train_cpu = time.process_time() - t_train
    base, learners = setup.restore(state)
    last_tables = tuple(t.double().numpy() for t in base.policy_tables())
    transformed = tuple(t.double().numpy() for t in base.transformed_tables())
    base_step, _ = select_base_checkpoint(base_curve, config.train_steps)
    base_tables = checkpoints[base_step]

    # 3. exploitability of the selected base policy, of its last iterate and of true-model search
    true_model = ctx.unit(
        f"{prefix}eval-true-model", lambda: _evaluate_true_model(setup, base_tables, last_tables, transformed)
    )
    ctx.log(
        f"seed {j}: base (step {base_step}) {true_model.base:.4f} (last iterate {true_model.last_iterate:.4f})  "
        f"true-model depth-1 search {true_model.depth1:.4f}  full {true_model.full:.4f}"
    )
    models = _evaluate_models(setup, ctx, learners, base_tables, transformed)
    # the control: the same search on a limited-capacity model that was never trained
    control = ctx.unit(f"{prefix}eval-untrained", lambda: _evaluate_untrained(setup, base_tables, transformed))
    ctx.log(
        f"seed {j} untrained L={control['capacity']} (control): exploitability {control['exploitability']:.4f}, "
        f"exact score vs base {control['exact_score_vs_base']:.3f}"
    )
    result = {
        "seed": j,
        "base_step": base_step,
        "base_exploitability": true_model.base,
        "last_iterate_exploitability": true_model.last_iterate,
        "true_model_depth1_exploitability": true_model.depth1,
        "true_model_full_exploitability": true_model.full,
        "true_model_depth1_score_vs_base": true_model.depth1_score_vs_base,
        "models": models,
        "untrained_control": control,
        "train_cpu_s": train_cpu,
    }
    return result, state, base_curve


def _evaluate_models(
    setup: _Setup,
    ctx: RunContext,
    learners: list[AbstractModelLearner],
    base_tables: tuple[np.ndarray, ...],
    transformed: tuple[np.ndarray, ...],
) -> dict[str, dict[str, Any]]:
    """Steps 3-5 for every learned model of a replicate, one unit ``seed<j>-eval-<model>`` each."""
    models: dict[str, dict[str, Any]] = {}
    for (name, capacity, kappa), learner in zip(setup.specs, learners, strict=True):
        models[name] = ctx.unit(
            f"seed{setup.replicate}-eval-{name}",
            lambda name=name, learner=learner: _evaluate_model(setup, name, learner, base_tables, transformed),
        )
        accuracy = models[name]["accuracy"]
        match = models[name]["match_vs_base"]
        ctx.log(
            f"seed {setup.replicate} {name} (L={capacity}, kappa={kappa}): exploitability "
            f"{models[name]['exploitability']:.4f}, one-to-one {accuracy['one_to_one_public_states']:.2f}, "
            f"match score {match['score']:.3f}±{match['ci95']:.3f}"
        )
    return models


@dataclass(frozen=True)
class _Setup:
    """What every unit of a run shares: the config, the game, its tensors, and the learners' settings."""

    config: LamirConfig
    game: Any  # pyspiel.Game
    tree: GameTree
    feats: GameFeatures
    replicate: int = 0  # its generators derive from (master seed, replicate); its units' keys start "seed<j>-"

    @property
    def specs(self) -> list[tuple[str, int, Kappa]]:
        """``(name, capacity, kappa)`` of every learned model: ``exact`` (claim 1), then ``L<c>`` of the sweep."""
        c = self.config
        return [("exact", c.exact_capacity, c.exact_kappa)] + [(f"L{L}", L, c.sweep_kappa) for L in c.sweep_capacities]

    @property
    def base_settings(self) -> BaseAgentSettings:
        """Hyperparameters of the base agent and τ_θ."""
        c = self.config
        return BaseAgentSettings(hidden=c.hidden, lr=c.lr, num_transformations=c.num_transformations)

    def model_settings(self) -> list[ModelSettings]:
        """Hyperparameters of every learned model, in the order of :attr:`specs`."""
        c = self.config
        return [
            ModelSettings(
                capacity=capacity,
                kappa=kappa,
                gamma_start=c.gamma_start,
                gamma_end=c.gamma_end,
                hidden=c.hidden,
                latent_dim=c.latent_dim,
                lr=c.lr,
                unroll=self.tree.max_steps,
                rho_bar=c.rho_bar,
                c_bar=c.rho_bar,
            )
            for _, capacity, kappa in self.specs
        ]

    def restore(self, state: TrainingState) -> tuple[BaseAgentLearner, list[AbstractModelLearner]]:
        """The base agent and the model learners as ``state`` left them."""
        base = BaseAgentLearner(self.feats, self.base_settings)
        base.load_state_dict(state.base)
        bound = float(np.abs(self.tree.reward).max())
        learners = []
        for settings, saved in zip(self.model_settings(), state.models, strict=True):
            learner = AbstractModelLearner(
                self.feats, settings, num_transformations=self.config.num_transformations, value_bound=bound
            )
            learner.load_state_dict(saved)
            learners.append(learner)
        return base, learners

    def untrained(self) -> AbstractModelLearner:
        """A model learner of the limited capacity (``L<limited_capacity>``'s settings) at its initial weights,
        drawn from torch's generator as the calling unit seeded it."""
        names = [name for name, _, _ in self.specs]
        settings = self.model_settings()[names.index(f"L{self.config.limited_capacity}")]
        bound = float(np.abs(self.tree.reward).max())
        return AbstractModelLearner(
            self.feats, settings, num_transformations=self.config.num_transformations, value_bound=bound
        )


@dataclass(frozen=True)
class _TrainPiece:
    """A training unit's result: the state after its last step, the base curve's points logged in it and the base
    policy's tables at those checkpoints."""

    state: TrainingState
    base_curve: list[tuple[int, float]]
    tables: dict[int, tuple[np.ndarray, ...]]


def _train_piece(setup: _Setup, start: TrainingState | None, stop: int, bar: Any) -> _TrainPiece:
    """Training steps ``start.step .. stop - 1`` (from scratch when ``start`` is None)."""
    from iclr26.lamir.evaluation import exploitability
    from iclr26.lamir.training import train_lamir

    config = setup.config
    base_curve: list[tuple[int, float]] = []
    checkpoints: dict[int, tuple[np.ndarray, ...]] = {}

    def checkpoint(step: int, result: Any) -> None:
        tables = tuple(t.double().numpy() for t in result.base.policy_tables())
        base_curve.append((step, exploitability(setup.game, setup.tree, tables)))
        checkpoints[step] = tables

    def progress(steps: range):
        for step in steps:
            yield step
            bar.update(1)

    trained = train_lamir(
        setup.tree,
        setup.feats,
        base_settings=setup.base_settings,
        model_settings=setup.model_settings(),
        steps=config.train_steps,
        batch=config.batch,
        epsilon_pg=config.epsilon_pg,
        epsilon_model=config.epsilon_model,
        rng=numpy_rng(derive_seed(config.seed, "episodes", setup.replicate)),
        log_every=config.checkpoint_every,
        progress=progress,
        on_checkpoint=checkpoint,
        start=start,
        stop=stop,
    )
    return _TrainPiece(state=trained.state(), base_curve=base_curve, tables=checkpoints)


@dataclass(frozen=True)
class _TrueModelResult:
    """Exploitability of the selected base policy, of its last iterate and of true-model search, and the depth-1
    search's exact score against the selected base policy."""

    base: float
    last_iterate: float
    depth1: float
    full: float
    depth1_score_vs_base: float


def _evaluate_true_model(
    setup: _Setup,
    base_tables: tuple[np.ndarray, ...],
    last_tables: tuple[np.ndarray, ...],
    transformed: tuple[np.ndarray, ...],
) -> _TrueModelResult:
    from iclr26.lamir.evaluation import exploitability, seat_averaged_score
    from iclr26.lamir.search import TrueModel, resolve_all, transformed_values

    game, tree, iterations = setup.game, setup.tree, setup.config.cfr_iterations
    exact_values = transformed_values(tree, transformed)
    true_d1 = resolve_all(tree, TrueModel(tree, depth_limit=1, leaf_values=exact_values), iterations=iterations)
    true_full = resolve_all(tree, TrueModel(tree, depth_limit=None), iterations=iterations)
    return _TrueModelResult(
        base=exploitability(game, tree, base_tables),
        last_iterate=exploitability(game, tree, last_tables),
        depth1=exploitability(game, tree, true_d1.tables),
        full=exploitability(game, tree, true_full.tables),
        depth1_score_vs_base=seat_averaged_score(tree, true_d1.tables, base_tables),
    )


def _evaluate_model(
    setup: _Setup,
    name: str,
    learner: AbstractModelLearner,
    base_tables: tuple[np.ndarray, ...],
    transformed: tuple[np.ndarray, ...],
) -> dict[str, Any]:
    """Steps 3-5 for one learned model: search exploitability, model accuracy, the match and the ablation."""
    from open_spiel.python.bots.policy import PolicyBot

    from iclr26.lamir.accuracy import learned_values_on_real_histories, model_accuracy
    from iclr26.lamir.bot import LamirBot, ResolveCache
    from iclr26.lamir.evaluation import exploitability, play_match, seat_averaged_score, tabular_policy
    from iclr26.lamir.search import LearnedModel, TrueModel, resolve_all, transformed_values

    config, game, tree, feats = setup.config, setup.game, setup.tree, setup.feats
    abstraction = (learner.abstraction(0), learner.abstraction(1))
    search_model = LearnedModel(feats, learner.model, abstraction)
    policy = resolve_all(tree, search_model, iterations=config.cfr_iterations)
    accuracy = model_accuracy(tree, feats, learner.model, abstraction, transformed_values(tree, transformed))
    caches = (ResolveCache(), ResolveCache())
    base_policy = tabular_policy(game, tree, base_tables)

    def agent(seat: int, seed: int) -> Any:
        return LamirBot(
            game, tree, search_model, player=seat, iterations=config.cfr_iterations, seed=seed, cache=caches[seat]
        )

    def opponent(seat: int, seed: int) -> Any:
        return PolicyBot(seat, numpy_rng(seed), base_policy)

    match = play_match(
        game, agent, opponent, games=config.match_games, seed=derive_seed(config.seed, "match", name, setup.replicate)
    )
    ablation = TrueModel(
        tree, depth_limit=1, leaf_values=learned_values_on_real_histories(tree, feats, learner.model, abstraction)
    )
    return {
        "capacity": learner.settings.capacity,
        "kappa": learner.settings.kappa,
        "exploitability": exploitability(game, tree, policy.tables),
        "true_tree_learned_values_exploitability": exploitability(
            game, tree, resolve_all(tree, ablation, iterations=config.cfr_iterations).tables
        ),
        "exact_score_vs_base": seat_averaged_score(tree, policy.tables, base_tables),
        "match_vs_base": asdict(match),
        "accuracy": {**asdict(accuracy), "dynamics_exact": accuracy.dynamics_exact},
        "resolve": [asdict(s) for s in policy.stats],
        "empty_legal_predictions": search_model.stats.empty_legal,
    }


def _evaluate_untrained(
    setup: _Setup, base_tables: tuple[np.ndarray, ...], transformed: tuple[np.ndarray, ...]
) -> dict[str, Any]:
    """The control that must fail: LAMIR's search on a limited-capacity model that never trained (its initial
    weights): exploitability, exact expected score against the base policy, and model accuracy."""
    from iclr26.lamir.accuracy import model_accuracy
    from iclr26.lamir.evaluation import exploitability, seat_averaged_score
    from iclr26.lamir.search import LearnedModel, resolve_all, transformed_values

    config, game, tree, feats = setup.config, setup.game, setup.tree, setup.feats
    learner = setup.untrained()
    abstraction = (learner.abstraction(0), learner.abstraction(1))
    search_model = LearnedModel(feats, learner.model, abstraction)
    policy = resolve_all(tree, search_model, iterations=config.cfr_iterations)
    accuracy = model_accuracy(tree, feats, learner.model, abstraction, transformed_values(tree, transformed))
    return {
        "capacity": learner.settings.capacity,
        "kappa": learner.settings.kappa,
        "exploitability": exploitability(game, tree, policy.tables),
        "exact_score_vs_base": seat_averaged_score(tree, policy.tables, base_tables),
        "accuracy": {**asdict(accuracy), "dynamics_exact": accuracy.dynamics_exact},
        "empty_legal_predictions": search_model.stats.empty_legal,
    }


def _evaluate_poker(config: LamirConfig) -> dict[str, float]:
    """Step 6: exploitability of continual resolving with the true model in Kuhn and Leduc poker."""
    import pyspiel

    from iclr26.lamir.evaluation import exploitability
    from iclr26.lamir.games import tabulate_game
    from iclr26.lamir.search import TrueModel, resolve_all

    out = {}
    for name in ("kuhn_poker", "leduc_poker"):
        poker_game = pyspiel.load_game(name)
        poker_tree = tabulate_game(poker_game, allow_chance=True)
        policy = resolve_all(poker_tree, TrueModel(poker_tree, depth_limit=None), iterations=config.poker_iterations)
        out[name] = exploitability(poker_game, poker_tree, policy.tables)
    return out


def _plot_capacity(ctx: RunContext, config: LamirConfig, first: dict[str, Any], one_to_one_size: int) -> None:
    """Exploitability and model accuracy against the capacity ``L``, for the first replicate ``first``."""
    models = first["models"]
    base, true_d1 = first["base_exploitability"], first["true_model_depth1_exploitability"]
    true_full = first["true_model_full_exploitability"]
    fig, axes = figure(2, 1, width=5.2)
    ax, ax2 = axes[0]
    sweep = sorted((m["capacity"], m) for name, m in models.items() if name != "exact")
    caps = [c for c, _ in sweep]
    exact = models["exact"]
    ax.plot(caps, [m["exploitability"] for _, m in sweep], "o-", color="C0", label=f"LAMIR, kappa={config.sweep_kappa}")
    ax.plot([exact["capacity"]], [exact["exploitability"]], "s", color="C3", label=f"LAMIR, kappa={config.exact_kappa}")
    ax.plot(
        caps + [exact["capacity"]],
        [m["true_tree_learned_values_exploitability"] for _, m in sweep]
        + [exact["true_tree_learned_values_exploitability"]],
        "x",
        color="grey",
        label="ablation: true tree + learned v",
    )
    ax.axhline(base, color="k", ls="--", label="base policy (NeuRD/RNaD)")
    ax.axhline(true_d1, color="C2", ls=":", label="true-model search, depth 1")
    ax.axhline(true_full, color="C4", ls="-.", label="true-model search, full depth")
    ax.axvline(one_to_one_size, color="grey", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("capacity L (abstract infosets per public state)")
    ax.set_ylabel("exploitability (NashConv / 2)")
    ax.set_title(f"II-Goofspiel {config.num_cards}")
    ax.legend(fontsize=7)
    for key, marker, label in (
        ("one_to_one_public_states", "o", "public states mapped one-to-one"),
        ("separated_pairs", "s", "infoset pairs separated"),
        ("legal_accuracy", "^", "legal-action sets right"),
    ):
        line = ax2.plot(caps, [m["accuracy"][key] for _, m in sweep], marker + "-", label=label)[0]
        ax2.plot([exact["capacity"]], [exact["accuracy"][key]], marker, color=line.get_color(), mfc="none")
    ax2.axvline(one_to_one_size, color="grey", lw=0.8)
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel(f"capacity L (lines: kappa={config.sweep_kappa}; open: kappa={config.exact_kappa})")
    ax2.set_ylabel("fraction")
    ax2.set_ylim(0, 1.05)
    ax2.legend(fontsize=7)
    ctx.save_plot(fig, "exploitability_vs_capacity.png")


def _plot_training(
    ctx: RunContext,
    base_curves: list[list[tuple[int, float]]],
    base_steps: list[int],
    curves: dict[str, list[tuple[int, float]]],
) -> None:
    """The base policy's exploitability curve per replicate (its selected checkpoint starred) and the model losses."""
    fig, axes = figure(2, 1, width=5.2)
    ax, ax2 = axes[0]
    for j, (curve, chosen) in enumerate(zip(base_curves, base_steps, strict=True)):
        line = ax.plot([s for s, _ in curve], [v for _, v in curve], "o-", ms=3, label=f"seed {j}")[0]
        ax.plot([chosen], [dict(curve)[chosen]], "*", ms=12, color=line.get_color())
    ax.set_xlabel("training step (star: the selected base checkpoint)")
    ax.set_ylabel("base policy exploitability")
    ax.legend(fontsize=7)
    for name, values in curves.items():
        if name.endswith("/model_loss"):
            ax2.plot([s for s, _ in values], [v for _, v in values], label=name.split("/")[0])
    ax2.set_yscale("log")
    ax2.set_xlabel(f"training step (seed {len(base_curves) - 1})")
    ax2.set_ylabel("model loss L^M")
    ax2.legend(fontsize=7)
    ctx.save_plot(fig, "training_curves.png")


EXPERIMENT = Experiment(config_cls=LamirConfig, run=run)
