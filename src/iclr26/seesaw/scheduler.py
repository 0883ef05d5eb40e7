"""Seesaw for a plain PyTorch loop: an LR scheduler that also says how large the next batch is.

:class:`SeesawLR` is used like ``torch.optim.lr_scheduler.LambdaLR``: call ``step()`` after each
``optimizer.step()``; it scales every parameter group's initial LR by the schedule's multiplier and exposes
``batch_size``, the number of samples the next step must use (feed it to your data pipeline, or use
:class:`iclr26.seesaw.SeesawBatchSampler`, which follows the same schedule by itself).

Both count tokens the same way as :meth:`iclr26.seesaw.Seesaw.plan`, so they agree step for step with it and with
each other.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch

from iclr26.seesaw.schedule import Seesaw


class SeesawLR:
    """Sets ``param_group['lr'] = initial_lr · lr(n) / η₀`` after ``n`` tokens and tracks the planned batch.

    Args:
        optimizer: any ``torch.optim.Optimizer``; each group's current ``lr`` is taken as its ``initial_lr``
            (kept if the group already has one, as after a resume), so per-group LR ratios are preserved.
        schedule: the :class:`~iclr26.seesaw.Seesaw` schedule.

    Attributes:
        step_count: optimizer steps taken so far.
        tokens_seen: tokens consumed so far.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, schedule: Seesaw) -> None:
        if not isinstance(schedule, Seesaw):
            raise TypeError(f"SeesawLR schedule must be a Seesaw, got {type(schedule).__name__}")
        self.optimizer = optimizer
        self.schedule = schedule
        self.step_count = 0
        self.tokens_seen = 0
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self._apply()

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

    def step(self, batch_size: int | None = None) -> None:
        """Account for the step just taken and set the LR of the next one.

        Args:
            batch_size: samples the step used; None means the planned :attr:`batch_size`. A smaller value is
                accepted (e.g. a short last batch of your own loader) and the token count follows it; a larger one
                is not, since it would exceed the schedule's batch (and its cap) or overspend the budget.

        Raises:
            ValueError: if ``batch_size`` is not a positive int (NaN included) or exceeds the planned
                :attr:`batch_size`.
            RuntimeError: if the budget was already spent.
        """
        planned = self.batch_size
        used = planned if batch_size is None else batch_size
        if isinstance(used, bool) or not isinstance(used, numbers.Integral) or used <= 0:
            raise ValueError(f"SeesawLR.step batch_size must be a positive int, got {used!r}")
        if used > planned:
            raise ValueError(
                f"SeesawLR.step batch_size={used} exceeds the planned batch of {planned} samples after "
                f"{self.tokens_seen} tokens; feed the data loader SeesawLR.batch_size (or a SeesawBatchSampler)"
            )
        self.tokens_seen += used * self.schedule.tokens_per_sample
        self.step_count += 1
        self._apply()

    def _apply(self) -> None:
        m = self.schedule.multiplier(self.tokens_seen)
        for group in self.optimizer.param_groups:
            group["lr"] = group["initial_lr"] * m

    def get_last_lr(self) -> list[float]:
        """The LR each parameter group holds now (the one the next step will use)."""
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Counters to save beside the optimizer's state."""
        return {"step_count": self.step_count, "tokens_seen": self.tokens_seen}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the counters (and the LRs they imply).

        Raises:
            ValueError: if ``step_count`` or ``tokens_seen`` is not an int >= 0 (NaN included).
        """
        for key in ("step_count", "tokens_seen"):
            value = state[key]
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"SeesawLR.load_state_dict {key} must be an int >= 0, got {value!r}")
        self.step_count = int(state["step_count"])
        self.tokens_seen = int(state["tokens_seen"])
        self._apply()
