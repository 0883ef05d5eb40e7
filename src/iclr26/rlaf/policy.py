"""The RLAF policy: a GNN that maps a formula to a distribution over parameterisations ``W = (w, p)``, in one pass.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053), the policy network, and the official ``src/policy/policy.py`` and
``src/model/model.py`` (read for the facts, not copied). For every variable ``x`` the GNN's head reads the two
literal embeddings ``[h_x ‖ h_¬x]`` and outputs ``(ρ(x), μ(x))``; then

- ``p(x) ~ Bernoulli(σ(clamp(ρ(x), −8, 8)))``,
- ``w(x) ~ LogNormal(μ(x), σ_w)`` with the fixed scale ``σ_w = 0.1``,
- ``log π(W | F) = Σ_x [log Bern(p(x)) + log LogNormal(w(x))]``,
- evaluation uses the mode: ``p(x) = [ρ(x) > 0]``, ``w(x) = exp(μ(x) − σ_w²)``.

The head's last layer starts at zero, so the initial policy is ``p ~ Bernoulli(½)``, ``w ~ LogNormal(0, σ_w) ≈ 1``,
and its mode (all false, all ``w = e^{−0.01}``) orders variables exactly as the unguided solver does.

Shape glossary: B formulas; V variables of the batch; S samples per formula; D channels.

Deviations: the official code zero-initialises only the last layer's weight (its bias keeps PyTorch's small random
init); here the bias is zeroed too, so the initial mode equals the unguided solver exactly. For the same reason the
mode's polarity at a tie ``ρ(x) = 0`` is false; the official code's ``torch.distributions.Binomial(total_count=1)``
mode is ``⌊2·σ(ρ)⌋ = 1`` (true) there. Only an exact tie is affected, i.e. in practice only the initial policy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.gnn import LiteralClauseGNN
from iclr26.rlaf.graph import LiteralClauseGraph, build_graph
from iclr26.rlaf.guidance import Guidance

__all__ = [
    "RLAFPolicy",
    "Samples",
    "policy_kl",
    "policy_log_prob",
    "policy_mode",
    "sample_parameterisations",
    "split_guidance",
]

RHO_CLAMP = 8.0  # official code: |ρ| clamped at 8


def _sum_per_formula(values: Tensor, var_batch: Tensor, num_formulas: int) -> Tensor:
    """``(..., V) → (..., B)``: sum over each formula's variables."""
    out = values.new_zeros(*values.shape[:-1], num_formulas)
    return out.index_add_(values.ndim - 1, var_batch, values)


def policy_log_prob(
    y: Tensor, polarity: Tensor, weight: Tensor, var_batch: Tensor, num_formulas: int, *, sigma: float
) -> Tensor:
    """``log π(W | F)`` of sampled parameterisations, one value per sample and formula.

    Args:
        y: ``(V, 2)`` head output ``(ρ, μ)``.
        polarity: ``(S, V)`` sampled polarities (bool or 0/1).
        weight: ``(S, V)`` sampled weights (> 0).
        var_batch: ``(V,)`` formula of each variable.
        num_formulas: ``B``.
        sigma: the log-normal scale ``σ_w``.

    Returns:
        ``(S, B)`` log-probabilities.
    """
    # p(x) ~ Bernoulli(logit = clamp(ρ, ±8)): the clamp keeps every polarity stochastic, so log π stays finite
    rho = y[:, 0].clamp(-RHO_CLAMP, RHO_CLAMP)
    mu = y[:, 1]
    p = polarity.to(y.dtype)
    # log Bern(p | logit ρ) = p·ρ − softplus(ρ)
    log_bern = p * rho - F.softplus(rho)
    log_w = torch.log(weight.to(y.dtype))
    # log LogNormal(w | μ, σ) = −log w − log σ − ½ log 2π − (log w − μ)² / (2σ²)
    log_lognormal = -log_w - math.log(sigma) - 0.5 * math.log(2 * math.pi) - (log_w - mu) ** 2 / (2 * sigma**2)
    # log π(W | F) = Σ_x [log Bern + log LogNormal]
    return _sum_per_formula(log_bern + log_lognormal, var_batch, num_formulas)


def policy_kl(y: Tensor, y_ref: Tensor, var_batch: Tensor, num_formulas: int, *, sigma: float) -> Tensor:
    """Closed-form ``KL(π_y ‖ π_y_ref)`` per formula (official code: ``policy.kl_div``, summed over variables).

    Args:
        y: ``(V, 2)`` head output of the policy being trained.
        y_ref: ``(V, 2)`` head output of the reference policy (no gradient needed).
        var_batch: ``(V,)`` formula of each variable.
        num_formulas: ``B``.
        sigma: the shared log-normal scale ``σ_w``.

    Returns:
        ``(B,)`` KL divergences (>= 0).
    """
    rho = y[:, 0].clamp(-RHO_CLAMP, RHO_CLAMP)
    rho_ref = y_ref[:, 0].clamp(-RHO_CLAMP, RHO_CLAMP).detach()
    q = torch.sigmoid(rho)
    # KL(Bern(q) ‖ Bern(q_ref)) = q (log q − log q_ref) + (1 − q)(log(1 − q) − log(1 − q_ref))
    kl_bern = q * (F.logsigmoid(rho) - F.logsigmoid(rho_ref)) + (1 - q) * (F.logsigmoid(-rho) - F.logsigmoid(-rho_ref))
    # KL(LogNormal(μ, σ) ‖ LogNormal(μ_ref, σ)) = (μ − μ_ref)² / (2σ²)
    kl_lognormal = (y[:, 1] - y_ref[:, 1].detach()) ** 2 / (2 * sigma**2)
    return _sum_per_formula(kl_bern + kl_lognormal, var_batch, num_formulas)


@dataclass(frozen=True)
class Samples:
    """``S`` sampled parameterisations of every variable of a batch.

    Attributes:
        polarity: ``(S, V)`` bool.
        weight: ``(S, V)`` float, > 0.
    """

    polarity: Tensor
    weight: Tensor


def sample_parameterisations(y: Tensor, num_samples: int, *, sigma: float, generator: torch.Generator) -> Samples:
    """Draw ``S = num_samples`` parameterisations from the policy ``y`` (``(V, 2)``)."""
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    y = y.detach()
    rho = y[:, 0].clamp(-RHO_CLAMP, RHO_CLAMP)
    shape = (num_samples, y.shape[0])
    # p(x) ~ Bernoulli(σ(ρ))
    polarity = torch.rand(shape, generator=generator, dtype=y.dtype) < torch.sigmoid(rho)
    # w(x) = exp(μ + σ·ε), ε ~ N(0, 1)
    weight = torch.exp(y[:, 1] + sigma * torch.randn(shape, generator=generator, dtype=y.dtype))
    return Samples(polarity=polarity, weight=weight)


def policy_mode(y: Tensor, *, sigma: float) -> Samples:
    """The mode of the policy (``S = 1``): ``p = [ρ > 0]``, ``w = exp(μ − σ²)`` (the log-normal's mode)."""
    y = y.detach()
    # evaluation injects the mode, not a sample: argmax polarity and the log-normal's mode exp(μ − σ²)
    polarity = (y[:, 0] > 0).unsqueeze(0)
    weight = torch.exp(y[:, 1] - sigma**2).unsqueeze(0)
    return Samples(polarity=polarity, weight=weight)


def split_guidance(samples: Samples, num_vars: Sequence[int]) -> list[list[Guidance]]:
    """Cut batched samples into per-formula :class:`Guidance`: ``out[b][s]``.

    Raises:
        ValueError: if ``num_vars`` does not add up to the samples' ``V``.
    """
    if sum(num_vars) != samples.polarity.shape[1]:
        raise ValueError(f"num_vars sums to {sum(num_vars)} but the samples have V={samples.polarity.shape[1]}")
    polarity = samples.polarity.cpu().numpy()
    weight = samples.weight.detach().cpu().double().numpy()
    out: list[list[Guidance]] = []
    start = 0
    for n in num_vars:
        out.append(
            [
                Guidance(polarity=polarity[s, start : start + n], weight=weight[s, start : start + n])
                for s in range(polarity.shape[0])
            ]
        )
        start += n
    return out


class RLAFPolicy(nn.Module):
    """The RLAF policy network: literal–clause GNN plus a per-variable head ``[h_x ‖ h_¬x] → (ρ, μ)``.

    Args:
        channels: hidden width (paper: 256).
        num_layers: message-passing rounds (paper: 10).
        sigma: the log-normal scale ``σ_w`` of the weights (paper: 0.1).
    """

    def __init__(self, *, channels: int = 64, num_layers: int = 4, sigma: float = 0.1) -> None:
        super().__init__()
        for name, value in (("channels", channels), ("num_layers", num_layers)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if isinstance(sigma, bool) or not isinstance(sigma, int | float) or not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a finite number > 0 (the log-normal scale of the weights), got {sigma!r}")
        self.sigma = sigma
        self.gnn = LiteralClauseGNN(channels=channels, num_layers=num_layers)
        self.head = nn.Sequential(nn.Linear(2 * channels, 2 * channels), nn.SiLU(), nn.Linear(2 * channels, 2))
        # the last layer starts at zero: ρ = μ = 0, i.e. p ~ Bern(½), w ~ LogNormal(0, σ_w)
        nn.init.zeros_(self.head[-1].weight)
        nn.init.zeros_(self.head[-1].bias)

    def forward(self, graph: LiteralClauseGraph) -> Tensor:
        """``(V, 2)``: ``(ρ, μ)`` of every variable of the batch."""
        h_lit = self.gnn(graph)  # (L, D)
        h_var = h_lit.view(-1, 2 * h_lit.shape[1])  # (V, 2D) = [h_x ‖ h_¬x]
        return self.head(h_var)

    @torch.no_grad()
    def guidance(self, cnfs: Sequence[CNF]) -> list[Guidance]:
        """The mode parameterisation of each formula (what evaluation injects)."""
        graph = build_graph(cnfs)
        was_training = self.training
        self.eval()
        y = self(graph)
        self.train(was_training)
        return [g[0] for g in split_guidance(policy_mode(y, sigma=self.sigma), graph.num_vars)]

    def save(self, path: str | Path) -> None:
        """Write the policy (architecture and weights) to one file."""
        torch.save(
            {
                "kind": "rlaf_policy",
                "channels": self.gnn.channels,
                "num_layers": self.gnn.num_layers,
                "sigma": self.sigma,
                "state_dict": self.state_dict(),
            },
            Path(path),
        )

    @classmethod
    def load(cls, path: str | Path) -> RLAFPolicy:
        """Read a policy written by :meth:`save`.

        Raises:
            FileNotFoundError: if ``path`` does not exist.
            ValueError: naming the file, if it is not a file :meth:`save` wrote (binary junk, another torch file, a
                truncated or mismatched one).
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"RLAFPolicy.load: {path} is not a file (a policy written by RLAFPolicy.save)")
        fix = "pass a file written by RLAFPolicy.save (iclr26 run rlaf writes rlaf_policy_<family>.pt)"
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # torch raises UnpicklingError, RuntimeError, EOFError or IndexError on junk
            # torch's own message is long and suggests weights_only=False, which would run code from an unknown file
            raise ValueError(
                f"{path} cannot be read as a torch file (torch.load: {type(err).__name__}); {fix}"
            ) from None
        if not isinstance(blob, dict) or blob.get("kind") != "rlaf_policy":
            raise ValueError(f"{path} is not an RLAF policy file; {fix}")
        try:
            policy = cls(channels=blob["channels"], num_layers=blob["num_layers"], sigma=blob["sigma"])
            policy.load_state_dict(blob["state_dict"])
        except (KeyError, TypeError, ValueError, RuntimeError) as err:
            raise ValueError(f"{path} is a damaged RLAF policy file ({type(err).__name__}: {err}); {fix}") from None
        return policy
