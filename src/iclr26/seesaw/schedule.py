"""The Seesaw schedule: a learning-rate decay turned into a batch-size ramp, measured in tokens.

Paper: "Seesaw: Accelerating Training by Balancing Learning Rate and Batch Size Scheduling", Meterez, Morwani, Wu,
Oncescu, Pehlevan, Kakade — ICLR 2026, arXiv 2510.14717. No official code was found.

The rule (the paper's abstract): whenever a standard scheduler would divide the learning rate by a factor
α > 1, Seesaw divides it by √α instead and multiplies the batch size by α. For SGD the equivalent rule keeps the
learning rate and multiplies the batch size by α ("decay the LR ↔ increase the batch", Thm 1). Both follow from the
paper's phase-indexed form ``(η_k, B_k) = (η₀ a^{-k}, B₀ β^k)``:

* SGD (Thm 1): schedules with equal ``a · β`` have risks within a constant factor;
* normalised SGD, the paper's proxy for Adam (variance-dominated regime): equal ``a · √β``.

A base schedule cutting the LR by α per phase is ``(a, β) = (α, 1)``; a ramp with batch growth β per cut keeps
the same dynamics with ``a = α / √β`` (``rule="adam"``) or ``a = α / β`` (``rule="sgd"``).

One evaluation of :class:`Seesaw` at ``tokens`` (the numbered steps of the method):

1. inside the warmup (``tokens < warmup_tokens``) return the base warmup LR at the base batch B₀ (warmup unchanged);
2. compute the base decay multiplier ``f = base(p)`` at decay progress ``p = (tokens - n_w) / (N - n_w)``;
3. count the cuts the base schedule has made so far, ``k = ⌊log_α(1/f)⌋`` (the base LR has halved k times for
   α = 2 — the staircase of halvings that approximates a smooth base such as cosine);
4. the first ``K`` cuts ramp the batch, ``k_ramp = min(k, K)``, where ``K`` is the number of growths that fit
   under ``max_batch_size``; later cuts fall back to plain LR decay by α;
5. ``B = B₀ β^{k_ramp}``; ``η = η₀ a^{-k_ramp} α^{-(k - k_ramp)}`` (staircase), or with ``smooth=True``
   ``η = η₀ f · (α / a)^{k_ramp}`` (the base curve inside each phase, lifted by the undone decay).

Deviations:
    * The paper's exact discretisation of cosine into phases and its handling of the batch cap could not be read
      (only the abstract and summaries were available); here a phase starts when the base LR reaches
      ``η₀ α^{-k}``, and after the cap each further cut decays the LR by the full α.
    * Batch sizes must be whole numbers; a growth factor that would give a fractional batch raises instead of
      rounding.

Glossary: ``N`` total tokens, ``n_w`` warmup tokens, ``p`` decay progress in [0, 1], ``k`` cuts made by the base
schedule, ``K`` batch growths allowed by the cap, ``T`` tokens per sample (``tokens_per_sample``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from iclr26.common.lmtrain import BatchPlan

Rule = Literal["adam", "sgd"]
WeightDecayCorrection = Literal["per_token", "none"]
WEIGHT_DECAY_CORRECTIONS: tuple[str, ...] = ("per_token", "none")

# Relative slack in the cut count, so that a base value of exactly α^{-k} (e.g. a step decay) counts k cuts.
_CUT_SLACK = 1e-9
# Points on which a user-supplied base decay is checked to be a non-increasing map [0, 1] -> [0, 1].
_CHECK_POINTS = 2049


@dataclass(frozen=True)
class CosineDecay:
    """Cosine decay multiplier ``f(p) = r + (1 - r) (1 + cos(π p)) / 2`` on decay progress ``p ∈ [0, 1]``.

    Attributes:
        final_lr_frac: ``r``, the multiplier at the end (0 decays to zero).
    """

    final_lr_frac: float = 0.1

    def __post_init__(self) -> None:
        if not 0.0 <= self.final_lr_frac <= 1.0:
            raise ValueError(f"CosineDecay final_lr_frac must lie in [0, 1], got {self.final_lr_frac}")

    def __call__(self, p: float) -> float:
        """``f(p)``, with ``p`` clipped to [0, 1].

        Raises:
            ValueError: if ``p`` is NaN or not a real number.
        """
        _require_real("CosineDecay", "p", p)
        r = self.final_lr_frac
        return r + (1.0 - r) * 0.5 * (1.0 + math.cos(math.pi * min(max(p, 0.0), 1.0)))


@dataclass(frozen=True)
class StepDecay:
    """Step decay multiplier: divided by ``factor`` at each milestone (fractions of the decay period).

    ``f(p) = factor^{-j(p)}`` with ``j(p)`` the number of milestones ``≤ p``.

    Attributes:
        milestones: increasing decay progresses in (0, 1] at which the LR is divided by ``factor``.
        factor: the division at each milestone (> 1).
    """

    milestones: tuple[float, ...]
    factor: float = 2.0

    def __post_init__(self) -> None:
        if not self.milestones:
            raise ValueError("StepDecay milestones must hold at least one decay progress in (0, 1]")
        if any(not 0.0 < m <= 1.0 for m in self.milestones):
            raise ValueError(f"StepDecay milestones must lie in (0, 1], got {self.milestones}")
        if any(b <= a for a, b in zip(self.milestones, self.milestones[1:], strict=False)):
            raise ValueError(f"StepDecay milestones must be strictly increasing, got {self.milestones}")
        if not self.factor > 1.0:
            raise ValueError(f"StepDecay factor must be > 1, got {self.factor}")

    @classmethod
    def even(cls, n_cuts: int, factor: float = 2.0) -> StepDecay:
        """``n_cuts`` milestones splitting the decay period into ``n_cuts + 1`` equal phases (Thm 1's setting).

        Raises:
            ValueError: if ``n_cuts`` is not an int >= 1 (NaN included).
        """
        _require_whole("StepDecay.even", "n_cuts", n_cuts, minimum=1)
        return cls(tuple((j + 1) / (n_cuts + 1) for j in range(n_cuts)), factor)

    def __call__(self, p: float) -> float:
        """``f(p)``.

        Raises:
            ValueError: if ``p`` is NaN or not a real number.
        """
        _require_real("StepDecay", "p", p)
        return self.factor ** -sum(1 for m in self.milestones if p >= m)


def lr_decay_per_cut(alpha: float, batch_growth: float, rule: Rule) -> float:
    """The LR division ``a`` per cut that keeps a ramp of ``batch_growth`` per cut equivalent to LR decay by α.

    Thm 1 (SGD) keeps ``a · β`` fixed and its normalised-SGD extension keeps ``a · √β`` fixed; the base schedule
    is ``(a, β) = (α, 1)``.

    Args:
        alpha: the base schedule's LR division per cut, α > 1.
        batch_growth: the batch multiplication per cut, β ≥ 1.
        rule: ``"adam"`` (normalised SGD / Adam) or ``"sgd"``.

    Returns:
        ``a = α / √β`` for ``"adam"``, ``a = α / β`` for ``"sgd"``.
    """
    if rule == "adam":
        # NSGD equivalence: a · √β = α · √1
        return alpha / math.sqrt(batch_growth)
    if rule == "sgd":
        # Thm 1: a · β = α · 1
        return alpha / batch_growth
    raise ValueError(f"rule must be 'adam' or 'sgd', got {rule!r}")


def cut_count(f: float, alpha: float) -> float:
    """Number of α-cuts the base schedule has made when its multiplier is ``f``: ``⌊log_α(1/f)⌋`` (∞ at f = 0)."""
    if f <= 0.0:
        return math.inf
    # Step 3: k = ⌊log_α(1/f)⌋, the staircase of α-cuts that approximates a smooth base decay
    return float(math.floor(math.log(1.0 / f) / math.log(alpha) + _CUT_SLACK))


class Phase(NamedTuple):
    """One constant-(k) stretch of a Seesaw schedule.

    Attributes:
        index: ``k``, the number of cuts the base schedule has made.
        start_tokens: first token count of the phase (0 for ``k = 0``, which includes the warmup).
        batch_size: ``B₀ β^{min(k, K)}`` in samples.
        lr: the staircase learning rate ``η₀ a^{-min(k, K)} α^{-(k - min(k, K))}``.
    """

    index: int
    start_tokens: float
    batch_size: int
    lr: float


class StepRecord(NamedTuple):
    """One optimizer step of :meth:`Seesaw.plan` (all arrays of length = number of serial steps).

    Attributes:
        tokens_before: tokens seen before each step.
        lr: learning rate of each step.
        batch_size: samples in each step (the last one cut to the budget).
    """

    tokens_before: np.ndarray
    lr: np.ndarray
    batch_size: np.ndarray


@dataclass(frozen=True, kw_only=True)
class Seesaw:
    """Seesaw learning-rate and batch-size schedule, in tokens (see the module docstring for the steps).

    Defining rule (per cut of the base schedule by α): ``η ← η / a`` and ``B ← B · β`` with ``a = α/√β``
    (``rule="adam"``; the paper's Seesaw is β = α, so ``a = √α``) or ``a = α/β`` (``rule="sgd"``).

    It is a schedule for :func:`iclr26.common.lmtrain.train_lm` (``schedule(step, tokens_seen) -> BatchPlan``; the
    step argument is ignored since everything is measured in tokens), and drives a plain PyTorch loop through
    :class:`iclr26.seesaw.SeesawLR` and :class:`iclr26.seesaw.SeesawBatchSampler`.

    All fields are keyword-only.

    Attributes:
        peak_lr: η₀, the base schedule's LR after warmup.
        base_batch_size: B₀ in samples (the paper: the critical batch size of the constant-batch baseline).
        total_tokens: N, the token budget shared with the baseline.
        base: the base decay multiplier ``f(p)`` on decay progress ``p ∈ [0, 1]``: non-increasing, ``f(0) = 1``,
            values in [0, 1] (e.g. :class:`CosineDecay`, :class:`StepDecay` or any such callable).
        warmup_tokens: n_w, linear warmup ``η₀ (n + 1) / n_w`` at batch B₀ (the formula of
            :class:`iclr26.common.lmtrain.CosineSchedule`); left unchanged by Seesaw.
        alpha: α > 1, the base LR division that triggers one cut (2: the paper's halvings).
        batch_growth: β ≥ 1, the batch multiplication per cut; None means β = α (the paper's Seesaw).
        rule: ``"adam"`` (√ rule, Adam / normalised SGD) or ``"sgd"`` (the SGD rule; for Adam the naive ramp).
        max_batch_size: cap on the batch (samples); must equal ``B₀ β^K`` for some K ≥ 0. After K growths every
            cut decays the LR by the full α. None: no cap (then the base decay must stay above 0).
        smooth: follow the base curve inside each phase instead of the staircase.
        tokens_per_sample: tokens in one sample (the context length for an LM; 1 to count samples).
        weight_decay_correction: how a decoupled weight decay ``λ`` (AdamW: ``θ ← θ − η λ θ`` per step) follows
            the schedule. ``"per_token"`` (default): scale ``λ`` by :meth:`weight_decay_multiplier`,
            ``ρ = (a β / α)^{min(k, K)}``, so that the decay per token, ``η λ / B``, equals the base schedule's at
            batch B₀ (for Seesaw ``ρ = √β^k``: the LR is ÷√2 and the steps per token ÷2, so λ is ×√2 per cut; for the
            SGD rule ``ρ = 1``). Without it a Seesaw run decays its weights 2^{k/2}-fold less per token than the
            cosine run it replaces (the AdamW timescale ``B / (η λ)`` in tokens, Wang & Aitchison 2024, would
            grow). ``"none"``: ``ρ = 1``, torch's plain coupling of the decay to the LR per step.

    Raises:
        ValueError: naming the argument, for α ≤ 1, β < 1, a rule that would raise the LR at a cut, a base decay
            that is not non-increasing from 1, a cap that is not on the ramp or below B₀, a fractional batch size,
            or an unbounded ramp (no cap with a base decaying to 0); in the methods, for a token or step count
            that is negative, NaN or infinite, and for a token count past ``total_tokens`` (the schedule is defined
            on the budget only: it refuses rather than extrapolating the final LR).
    """

    peak_lr: float
    base_batch_size: int
    total_tokens: int
    base: Callable[[float], float] = CosineDecay()
    warmup_tokens: int = 0
    alpha: float = 2.0
    batch_growth: float | None = None
    rule: Rule = "adam"
    max_batch_size: int | None = None
    smooth: bool = False
    tokens_per_sample: int = 1
    weight_decay_correction: WeightDecayCorrection = "per_token"

    def __post_init__(self) -> None:
        if self.weight_decay_correction not in WEIGHT_DECAY_CORRECTIONS:
            raise ValueError(
                f"Seesaw weight_decay_correction must be one of {WEIGHT_DECAY_CORRECTIONS}, "
                f"got {self.weight_decay_correction!r}"
            )
        if not (self.peak_lr > 0 and math.isfinite(self.peak_lr)):
            raise ValueError(f"Seesaw peak_lr must be positive and finite, got {self.peak_lr}")
        _require_whole("Seesaw", "base_batch_size", self.base_batch_size, minimum=1)
        _require_whole("Seesaw", "total_tokens", self.total_tokens, minimum=1)
        _require_whole("Seesaw", "warmup_tokens", self.warmup_tokens, minimum=0)
        _require_whole("Seesaw", "tokens_per_sample", self.tokens_per_sample, minimum=1)
        if self.max_batch_size is not None:
            _require_whole("Seesaw", "max_batch_size", self.max_batch_size, minimum=1)
        if self.warmup_tokens >= self.total_tokens:
            raise ValueError(
                f"Seesaw warmup_tokens must lie in [0, total_tokens={self.total_tokens}), got {self.warmup_tokens}"
            )
        if not (self.alpha > 1.0 and math.isfinite(self.alpha)):
            raise ValueError(f"Seesaw alpha must be > 1 (the base LR division per cut), got {self.alpha}")
        if not (self.growth >= 1.0 and math.isfinite(self.growth)):
            raise ValueError(
                f"Seesaw batch_growth must be finite and >= 1 (or None for alpha), got {self.batch_growth}"
            )
        a = lr_decay_per_cut(self.alpha, self.growth, self.rule)
        if a < 1.0 - 1e-12:
            limit = self.alpha**2 if self.rule == "adam" else self.alpha
            raise ValueError(
                f"Seesaw batch_growth={self.growth} with rule={self.rule!r} would raise the LR at each cut "
                f"(division {a:.4g} < 1); use batch_growth <= {limit:.4g} "
                f"({'alpha**2' if self.rule == 'adam' else 'alpha'})"
            )
        _check_base(self.base)
        if self.max_batch_size is not None:
            if self.max_batch_size < self.base_batch_size:
                raise ValueError(
                    f"Seesaw max_batch_size={self.max_batch_size} is below base_batch_size={self.base_batch_size}"
                )
            if self.growth > 1.0 and _ramp_index(self.max_batch_size, self.base_batch_size, self.growth) is None:
                below = math.log(self.max_batch_size / self.base_batch_size) / math.log(self.growth)
                ramp = [self.base_batch_size * self.growth**k for k in range(int(below) + 2)]
                raise ValueError(
                    f"Seesaw max_batch_size={self.max_batch_size} is not on the ramp B0*beta^k = "
                    f"{[f'{b:.6g}' for b in ramp]}; pass one of these values so the cap is explicit"
                )
        elif self.growth > 1.0 and self.base(1.0) <= 0.0:
            raise ValueError(
                "Seesaw max_batch_size is None but the base decay reaches 0, so the batch would grow without bound; "
                "set max_batch_size (e.g. the critical batch size) or a positive final LR fraction"
            )
        if self.growth > 1.0:
            for k in range(int(self.max_growths) + 1):
                self._ramp_batch(k)  # raises on a fractional batch size

    @property
    def growth(self) -> float:
        """β, the batch multiplication per cut (``batch_growth`` or α)."""
        return self.alpha if self.batch_growth is None else self.batch_growth

    @property
    def lr_decay(self) -> float:
        """``a``, the LR division per ramped cut (Thm 1's α of the ramped schedule)."""
        return lr_decay_per_cut(self.alpha, self.growth, self.rule)

    @property
    def max_growths(self) -> float:
        """K, the number of batch growths before the cap (∞ without a cap or with β = 1)."""
        if self.growth == 1.0:
            return math.inf
        if self.max_batch_size is None:
            return cut_count(self.base(1.0), self.alpha)
        k = _ramp_index(self.max_batch_size, self.base_batch_size, self.growth)
        return float(k)

    def _ramp_batch(self, k: int) -> int:
        exact = self.base_batch_size * self.growth**k
        whole = round(exact)
        if abs(exact - whole) > 1e-9 * exact:
            raise ValueError(
                f"Seesaw batch_growth={self.growth} gives a fractional batch size {exact:.6g} = B0*beta^{k}; "
                "choose base_batch_size and batch_growth so every ramp batch is a whole number"
            )
        return whole

    def progress(self, tokens: float) -> float:
        """Decay progress ``p = (n - n_w) / (N - n_w)`` clipped to [0, 1].

        Raises:
            ValueError: if ``tokens`` is negative, NaN, infinite, not a number or past ``total_tokens`` (as in every
                method taking it: the schedule is defined on ``[0, total_tokens]``).
        """
        _require_within("tokens", tokens, self.total_tokens)
        # Step 2: decay progress p = (n - n_w) / (N - n_w); warmup keeps p = 0
        return min(1.0, max(0.0, (tokens - self.warmup_tokens) / (self.total_tokens - self.warmup_tokens)))

    def cuts(self, tokens: float) -> float:
        """``k``: the cuts the base schedule has made after ``tokens`` tokens (0 during warmup, ∞ where f = 0)."""
        _require_within("tokens", tokens, self.total_tokens)
        if tokens < self.warmup_tokens:
            return 0.0
        return cut_count(self.base(self.progress(tokens)), self.alpha)

    def batch_size(self, tokens: float) -> int:
        """Step 4: ``B = B₀ β^{min(k, K)}`` samples for a step starting after ``tokens`` tokens."""
        _require_within("tokens", tokens, self.total_tokens)
        if self.growth == 1.0:
            return self.base_batch_size
        # Steps 4-5: B = B₀ β^{min(k, K)}: each cut grows the batch until the cap, then cuts fall back to LR decay
        return self._ramp_batch(int(min(self.cuts(tokens), self.max_growths)))

    def lr(self, tokens: float) -> float:
        """Steps 1–5: the learning rate of a step starting after ``tokens`` tokens (``tokens ≤ total_tokens``)."""
        _require_within("tokens", tokens, self.total_tokens)
        if tokens < self.warmup_tokens:
            # Step 1: the base warmup, unchanged.
            return self.peak_lr * (tokens + 1) / self.warmup_tokens
        f = self.base(self.progress(tokens))
        k = self.cuts(tokens)
        k_ramp = min(k, self.max_growths)
        if self.smooth:
            # η = η₀ f (α / a)^{k_ramp}: the base LR with the decay the ramp replaced undone.
            return self.peak_lr * f * (self.alpha / self.lr_decay) ** k_ramp
        if math.isinf(k):
            return 0.0
        # Step 5: η = η₀ a^{-k_ramp} α^{-(k - k_ramp)}
        return self.peak_lr * self.lr_decay ** (-k_ramp) * self.alpha ** (-(k - k_ramp))

    def multiplier(self, tokens: float) -> float:
        """``lr(tokens) / peak_lr``, the factor a PyTorch optimizer's initial LR is scaled by."""
        return self.lr(tokens) / self.peak_lr

    def weight_decay_multiplier(self, tokens: float) -> float:
        """``ρ``, the factor on a decoupled weight decay ``λ`` at ``tokens`` (see ``weight_decay_correction``).

        ``"per_token"``: ``ρ = (η_base / η) · (B / B₀) = (a β / α)^{min(k, K)}`` with ``η_base`` the base schedule's
        LR (same staircase or smooth curve), so that ``η ρ λ / B = η_base λ / B₀``; ``"none"``: 1.
        """
        _require_within("tokens", tokens, self.total_tokens)
        if self.weight_decay_correction == "none" or tokens < self.warmup_tokens:
            return 1.0
        k_ramp = min(self.cuts(tokens), self.max_growths)
        if math.isinf(k_ramp):  # the base decayed to 0 with no cap: no ramp is possible (checked in __post_init__)
            return 1.0
        # ρ = (η_base / η) · (B / B₀) = (a / α)^{k_ramp} · β^{k_ramp}
        return (self.lr_decay * self.growth / self.alpha) ** k_ramp

    def __call__(self, step: int, tokens_seen: int) -> BatchPlan:
        """The :class:`~iclr26.common.lmtrain.BatchPlan` of the step after ``tokens_seen`` (``step`` is unused).

        Raises:
            ValueError: if ``step`` or ``tokens_seen`` is negative, NaN, infinite or not a number.
        """
        _require_count("step", step)
        _require_within("tokens_seen", tokens_seen, self.total_tokens)
        return BatchPlan(self.lr(tokens_seen), self.batch_size(tokens_seen))

    def phases(self) -> list[Phase]:
        """The phases in order, with their start (found by bisection on the base decay) and (B, staircase η)."""
        k_end = self.cuts(self.total_tokens)
        out = [Phase(0, 0.0, self.base_batch_size, self.peak_lr)]
        k_last = int(k_end) if math.isfinite(k_end) else self._last_finite_cut()
        for k in range(1, k_last + 1):
            start = self._cut_start(k)
            k_ramp = min(k, self.max_growths)
            lr = self.peak_lr * self.lr_decay ** (-k_ramp) * self.alpha ** (-(k - k_ramp))
            out.append(Phase(k, start, self._ramp_batch(int(k_ramp)), lr))
        return out

    def _last_finite_cut(self) -> int:
        """The last cut strictly before the end, for a base decaying to 0 (where k = ∞ at the last token)."""
        return int(self.cuts(self.total_tokens - 1e-6 * (self.total_tokens - self.warmup_tokens)))

    def _cut_start(self, k: int) -> float:
        """First token count at which ``cuts(tokens) >= k`` (bisection; the cut count is non-decreasing)."""
        lo, hi = float(self.warmup_tokens), float(self.total_tokens)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if self.cuts(mid) >= k:
                hi = mid
            else:
                lo = mid
        return hi

    def plan(self) -> StepRecord:
        """Every optimizer step of the run: tokens before it, its LR and its batch (the last cut to the budget).

        The last batch is cut as :func:`iclr26.common.lmtrain.train_lm` cuts it: to
        ``ceil((N - n) / T)`` samples.
        """
        tokens, lrs, batches = [], [], []
        n = 0
        while n < self.total_tokens:
            b = min(self.batch_size(n), math.ceil((self.total_tokens - n) / self.tokens_per_sample))
            tokens.append(n)
            lrs.append(self.lr(n))
            batches.append(b)
            n += b * self.tokens_per_sample
        return StepRecord(np.asarray(tokens, dtype=np.int64), np.asarray(lrs), np.asarray(batches, dtype=np.int64))

    def serial_steps(self) -> int:
        """Number of optimizer steps to spend ``total_tokens``."""
        return len(self.plan().lr)


def _require_whole(owner: str, name: str, value: object, *, minimum: int) -> None:
    """Reject ``value`` unless it is a whole number (an ``int``, numpy's included; not a bool) ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{owner} {name} must be an int >= {minimum}, got {value!r}")


def _require_real(owner: str, name: str, value: object) -> None:
    """Reject ``value`` unless it is a real number other than NaN (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ValueError(f"{owner} {name} must be a real number, not NaN, got {value!r}")


def _require_within(name: str, value: object, total: int) -> None:
    """Reject a token count unless it is a finite number in ``[0, total]``: the schedule ends at the budget."""
    _require_count(name, value)
    if value > total:
        raise ValueError(
            f"Seesaw {name}={value!r} is past total_tokens={total}: the schedule ends at the budget (the run is over; "
            "a loop that overshoots by a partial batch should ask for the schedule at total_tokens)"
        )


def _require_count(name: str, value: object) -> None:
    """Reject a token or step count unless it is a finite real number ``>= 0`` (NaN, inf, negatives, bools out)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"Seesaw {name} must be a finite number >= 0, got {value!r}")


def _ramp_index(cap: int, base: int, growth: float) -> int | None:
    """``K`` with ``base · growth^K == cap`` (to 1e-9 relative), else None."""
    k = round(math.log(cap / base) / math.log(growth))
    return k if abs(base * growth**k - cap) <= 1e-9 * cap else None


def _check_base(base: Callable[[float], float]) -> None:
    """Reject a base decay that is not a non-increasing map from f(0) = 1 into [0, 1]."""
    ps = np.linspace(0.0, 1.0, _CHECK_POINTS)
    values = np.array([float(base(float(p))) for p in ps])
    if not np.all(np.isfinite(values)):
        raise ValueError("Seesaw base decay returned a non-finite value; it must map [0, 1] into [0, 1]")
    if abs(values[0] - 1.0) > 1e-12:
        raise ValueError(f"Seesaw base decay must start at f(0) = 1 (the peak LR), got f(0) = {values[0]:.6g}")
    if values.min() < 0.0 or values.max() > 1.0 + 1e-12:
        raise ValueError(
            f"Seesaw base decay must stay in [0, 1], got values in [{values.min():.4g}, {values.max():.4g}]"
        )
    rises = np.nonzero(np.diff(values) > 1e-12)[0]
    if rises.size:
        i = int(rises[0])
        raise ValueError(
            f"Seesaw base decay must be non-increasing, but f({ps[i]:.4f}) = {values[i]:.6g} < "
            f"f({ps[i + 1]:.4f}) = {values[i + 1]:.6g}"
        )
