"""LAMIR: Look-ahead Reasoning with a Learned Model in Imperfect Information Games (Kubíček & Lisý, ICLR 2026,
arXiv 2510.05048, OpenReview NnBbr4hI8a).

Drop-in components (OpenSpiel idiom; needs the ``games`` extra, ``open-spiel``):

* :func:`tabulate_game` / :class:`GameTree` — an OpenSpiel two-player zero-sum imperfect-information game as arrays;
* :func:`train_lamir` — the base agent (NeuRD/RNaD, policy transformations) and LAMIR's learned abstract models
  (stoppable and continuable through a picklable :class:`TrainingState`);
* :class:`LearnedModel` / :class:`TrueModel` + :class:`ContinualResolver` / :func:`resolve_all` — test-time
  continual resolving with CFR+ on the merged, depth-limited subgame;
* :class:`LamirBot` — LAMIR as a ``pyspiel.Bot``.
"""

from iclr26.lamir.bot import LamirBot, ResolveCache
from iclr26.lamir.features import GameFeatures, game_features
from iclr26.lamir.games import (
    GameTree,
    UnsupportedGameError,
    goofspiel_game,
    load_goofspiel,
    tabulate,
    tabulate_game,
)
from iclr26.lamir.learners import AbstractModelLearner, BaseAgentLearner, BaseAgentSettings, ModelSettings
from iclr26.lamir.model import AbstractModel
from iclr26.lamir.search import (
    ContinualResolver,
    LearnedModel,
    TrueModel,
    resolve_all,
    transformed_values,
    whole_game_subgame,
)
from iclr26.lamir.subgame import SubgameBuilder, solve_cfr_plus
from iclr26.lamir.training import TrainingResult, TrainingState, train_lamir

__all__ = [
    "AbstractModel",
    "AbstractModelLearner",
    "BaseAgentLearner",
    "BaseAgentSettings",
    "ContinualResolver",
    "GameFeatures",
    "GameTree",
    "LamirBot",
    "LearnedModel",
    "ModelSettings",
    "ResolveCache",
    "SubgameBuilder",
    "TrainingResult",
    "TrainingState",
    "TrueModel",
    "UnsupportedGameError",
    "game_features",
    "goofspiel_game",
    "load_goofspiel",
    "resolve_all",
    "solve_cfr_plus",
    "tabulate",
    "tabulate_game",
    "train_lamir",
    "transformed_values",
    "whole_game_subgame",
]
