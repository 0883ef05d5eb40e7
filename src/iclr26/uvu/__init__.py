"""UVU — Universal Value-Function Uncertainties (Zanger et al., ICLR 2026, arXiv 2505.21119).

Drop-in components: :class:`UVU` (the estimator), the baselines :class:`ValueEnsemble` and :class:`RND`, the
universal value network :class:`UniversalMLP`, the offline data container :class:`Transitions`, the pure TD
functions of :mod:`iclr26.uvu.td` and the counted compute of each method (:mod:`iclr26.uvu.cost`). The
reproduction lives in :mod:`iclr26.uvu.experiment` (needs ``minigrid``).
"""

from iclr26.uvu.cost import CountedCost, ensemble_cost, mlp_backward_macs, mlp_forward_macs, rnd_cost, uvu_cost
from iclr26.uvu.data import Transitions
from iclr26.uvu.ensemble import StackedNetworks, ValueEnsemble
from iclr26.uvu.model import NTKLinear, UniversalMLP, count_parameters
from iclr26.uvu.ntk import TDLimit, relu_kernels, td_limit
from iclr26.uvu.rnd import RND
from iclr26.uvu.td import (
    ensemble_variance,
    synthetic_reward,
    td_loss,
    td_target,
    uvu_td_loss,
    uvu_uncertainty,
)
from iclr26.uvu.training import FitResult, fit
from iclr26.uvu.uvu import UVU

__all__ = [
    "RND",
    "UVU",
    "CountedCost",
    "FitResult",
    "NTKLinear",
    "StackedNetworks",
    "TDLimit",
    "Transitions",
    "UniversalMLP",
    "ValueEnsemble",
    "count_parameters",
    "ensemble_cost",
    "ensemble_variance",
    "fit",
    "mlp_backward_macs",
    "mlp_forward_macs",
    "relu_kernels",
    "rnd_cost",
    "synthetic_reward",
    "td_limit",
    "td_loss",
    "td_target",
    "uvu_cost",
    "uvu_td_loss",
    "uvu_uncertainty",
]
