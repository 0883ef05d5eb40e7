"""ST-HHOL (ICLR 2026, OpenReview Nc3dl43s5Z): hierarchical hypergraph online learning for crime prediction."""

from iclr26.sthhol.data import City, WindowedCity, generate_city, load_official, windows
from iclr26.sthhol.hypergraph import ContextHypergraph, CooccurrenceHypergraph, context_incidence, hypergraph_conv
from iclr26.sthhol.llm_block import PartiallyFrozenLLM, is_frozen_parameter
from iclr26.sthhol.model import STHHOL, Batch, sthhol_loss
from iclr26.sthhol.online import OnlineResult, OnlineSchedule, UpdateEvent, predict_days, run_online, update_calendar

__all__ = [
    "STHHOL",
    "Batch",
    "City",
    "ContextHypergraph",
    "CooccurrenceHypergraph",
    "OnlineResult",
    "OnlineSchedule",
    "PartiallyFrozenLLM",
    "UpdateEvent",
    "WindowedCity",
    "context_incidence",
    "generate_city",
    "hypergraph_conv",
    "is_frozen_parameter",
    "load_official",
    "predict_days",
    "run_online",
    "sthhol_loss",
    "update_calendar",
    "windows",
]
