"""Seesaw for a plain PyTorch loop: an LR scheduler that also says how large the next batch is.

:class:`SeesawLR` is a ``torch.optim.lr_scheduler.LRScheduler``: call ``step(batch_size)`` after each
``optimizer.step()``; it scales every parameter group's initial LR by the schedule's multiplier (and, with the
schedule's default ``weight_decay_correction="per_token"``, its initial weight decay by
:meth:`iclr26.seesaw.Seesaw.weight_decay_multiplier`), and exposes ``batch_size``, the number of samples the next
step must use (feed it to your data pipeline, or use :class:`iclr26.seesaw.SeesawBatchSampler`, which follows the same
schedule by itself). It is chainable (each step multiplies the group's current LR by ``m(n_new) / m(n_old)``, so it
composes with other schedulers, e.g. in ``ChainedScheduler``) and its ``state_dict`` / ``load_state_dict`` resume a
run mid-way.

Both count tokens the same way as :meth:`iclr26.seesaw.Seesaw.plan`, so they agree step for step with it and with
each other.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch
from torch.optim.lr_scheduler import LRScheduler

from iclr26.seesaw.schedule import Seesaw

# Keys of the state dict that are not the LRScheduler's own bookkeeping.
_COUNTERS = ("last_epoch", "tokens_seen")


class SeesawLR(LRScheduler):
    """Sets ``param_group['lr'] = initial_lr · lr(n) / η₀`` after ``n`` tokens and tracks the planned batch.

    With the schedule's ``weight_decay_correction="per_token"`` (its default) it also sets
    ``param_group['weight_decay'] = initial_weight_decay · ρ(n)`` (:meth:`Seesaw.weight_decay_multiplier`), so that
    an AdamW decay per token stays the base schedule's while the LR and the batch change; with ``"none"`` the weight
    decays are left alone.

    Args:
        optimizer: any ``torch.optim.Optimizer``; each group's current ``lr`` is taken as its ``initial_lr`` and its
            ``weight_decay`` (if any) as its ``initial_weight_decay`` (both kept if the group already has them, as
            after a resume), so per-group ratios are preserved.
        schedule: the :class:`~iclr26.seesaw.Seesaw` schedule.
        last_epoch: ``LRScheduler``'s resume index; leave at -1 and use :meth:`load_state_dict` to resume.

    Attributes:
        step_count: optimizer steps taken so far (``last_epoch``).
        tokens_seen: tokens consumed so far.

    After the last step, which may end up to one sample past the budget, the LR and weight decay are those at
    ``total_tokens`` (the schedule itself refuses a token count past its budget).

    Raises:
        TypeError: naming the argument, if ``optimizer`` is not a ``torch.optim.Optimizer`` or ``schedule`` not a
            :class:`Seesaw`.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, schedule: Seesaw, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"SeesawLR optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        if not isinstance(schedule, Seesaw):
            raise TypeError(f"SeesawLR schedule must be a Seesaw, got {type(schedule).__name__}")
        self.schedule = schedule
        self.tokens_seen = 0
        self._tokens_before = 0  # tokens at the previous LR update (for the chainable ratio)
        for group in optimizer.param_groups:
            if "weight_decay" in group:
                group.setdefault("initial_weight_decay", group["weight_decay"])
        super().__init__(optimizer, last_epoch)

    @property
    def step_count(self) -> int:
        """Optimizer steps taken so far."""
        return self.last_epoch

    @property
    def finished(self) -> bool:
        """Whether the token budget is spent."""
        return self.tokens_seen >= self.schedule.total_tokens

    @property
    def batch_size(self) -> int:
        """Samples the next step must use (the last step is cut to the budget, as in :meth:`Seesaw.plan`).

        Raises:
            RuntimeError: if the budget is already spent.
        """
        if self.finished:
            raise RuntimeError(
                f"SeesawLR: the budget of {self.schedule.total_tokens} tokens is spent after {self.step_count} steps"
            )
        remaining = math.ceil((self.schedule.total_tokens - self.tokens_seen) / self.schedule.tokens_per_sample)
        return min(self.schedule.batch_size(self.tokens_seen), remaining)

    def step(self, batch_size: int | None = None) -> None:  # type: ignore[override]
        """Account for the step just taken and set the LR (and weight decay) of the next one.

        Args:
            batch_size: samples the step used; None means the planned :attr:`batch_size`. A smaller value is
                accepted (e.g. a short last batch of your own loader) and the token count follows it; a larger one
                is not, since it would exceed the schedule's batch (and its cap) or overspend the budget.

        Raises:
            ValueError: if ``batch_size`` is not a positive int (NaN included) or exceeds the planned
                :attr:`batch_size`.
            RuntimeError: if the budget was already spent.
        """
        if self._is_initial:  # LRScheduler.__init__: set the LRs of the first step, count nothing
            super().step()
            self._apply_weight_decay()
            return
        planned = self.batch_size
        used = planned if batch_size is None else batch_size
        if isinstance(used, bool) or not isinstance(used, numbers.Integral) or used <= 0:
            raise ValueError(f"SeesawLR.step batch_size must be a positive int, got {used!r}")
        if used > planned:
            raise ValueError(
                f"SeesawLR.step batch_size={used} exceeds the planned batch of {planned} samples after "
                f"{self.tokens_seen} tokens; feed the data loader SeesawLR.batch_size (or a SeesawBatchSampler)"
            )
        self._tokens_before = self.tokens_seen
        self.tokens_seen += used * self.schedule.tokens_per_sample
        super().step()  # last_epoch += 1, then get_lr()
        self._apply_weight_decay()

    def get_lr(self) -> list[float]:
        """Chainable form: each group's current LR times ``m(n) / m(n_prev)`` (closed form at the start or when
        ``m(n_prev) = 0``)."""
        m_new = self.schedule.multiplier(self._clamped(self.tokens_seen))
        m_old = self.schedule.multiplier(self._clamped(self._tokens_before))
        if self._is_initial or m_old == 0.0:
            return self._get_closed_form_lr()
        # η(n) = η₀ m(n): the Seesaw LR at the tokens seen, applied as a ratio so chained schedulers compose
        return [group["lr"] * (m_new / m_old) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        """``initial_lr · m(n)`` for each group."""
        m = self.schedule.multiplier(self._clamped(self.tokens_seen))
        return [base * m for base in self.base_lrs]

    def _clamped(self, tokens: int) -> int:
        """``tokens`` capped at the budget: the last step may end up to one sample past it (its batch is cut to
        ``ceil(remaining / T)`` samples), and the schedule is defined on ``[0, total_tokens]`` only."""
        return min(tokens, self.schedule.total_tokens)

    def _apply_weight_decay(self) -> None:
        rho = self.schedule.weight_decay_multiplier(self._clamped(self.tokens_seen))
        if self.schedule.weight_decay_correction == "none":
            return
        for group in self.optimizer.param_groups:
            if "initial_weight_decay" in group:
                # λ ρ keeps η ρ λ / B equal to the base schedule's η_base λ / B₀ (per-token decoupled decay)
                group["weight_decay"] = group["initial_weight_decay"] * rho

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state (counters and LRScheduler bookkeeping), without the optimizer and the schedule."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "schedule")}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the counters, then set every group's LR and weight decay from them (closed form).

        Save and load the optimizer's state with it, as for any scheduler. A state from the earlier
        ``{"step_count", "tokens_seen"}`` form is accepted.

        Raises:
            ValueError: if ``last_epoch`` (or ``step_count``) or ``tokens_seen`` is not an int >= 0 (NaN included).
        """
        state = dict(state)
        if "step_count" in state:
            state["last_epoch"] = state.pop("step_count")
        for key in _COUNTERS:
            value = state.get(key)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                name = "step_count" if key == "last_epoch" else key
                raise ValueError(f"SeesawLR.load_state_dict {name} must be an int >= 0, got {value!r}")
        state.setdefault("_tokens_before", state["tokens_seen"])
        self.__dict__.update(state)
        for group, lr in zip(self.optimizer.param_groups, self._get_closed_form_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]
        self._apply_weight_decay()
