"""A ``torch.utils.data`` batch sampler whose batch size follows a Seesaw schedule.

Pass it as ``DataLoader(dataset, batch_sampler=SeesawBatchSampler(sampler, schedule))``. It draws indices from
``sampler`` (re-iterating it at each exhaustion, so a budget may span several epochs) and yields one list per
optimizer step, sized by the schedule at the samples it has yielded so far, until the token budget is spent. With
:class:`iclr26.seesaw.SeesawLR` on the same schedule the two agree step for step.

A batch that straddles an epoch boundary takes the end of one epoch and the start of the next, so with a shuffling
sampler it may hold the same index twice (as any stream of concatenated epochs would).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from torch.utils.data import Sampler

from iclr26.seesaw.schedule import Seesaw


class SeesawBatchSampler(Sampler[list[int]]):
    """Yields index batches of size ``schedule.batch_size(tokens yielded)`` until ``total_tokens``.

    Args:
        sampler: the index sampler (e.g. ``RandomSampler(dataset, generator=g)``); it must have a length.
        schedule: the :class:`~iclr26.seesaw.Seesaw` schedule.

    Raises:
        TypeError: if ``schedule`` is not a Seesaw or ``sampler`` has no length.
        ValueError: if the largest batch of the schedule exceeds the number of indices ``sampler`` holds (a batch
            would contain the same sample twice); lower ``max_batch_size``.
    """

    def __init__(self, sampler: Sampler[int], schedule: Seesaw) -> None:
        if not isinstance(schedule, Seesaw):
            raise TypeError(f"SeesawBatchSampler schedule must be a Seesaw, got {type(schedule).__name__}")
        if not isinstance(sampler, Sized):
            raise TypeError("SeesawBatchSampler sampler must have a length (len(sampler))")
        largest = int(schedule.plan().batch_size.max())
        if largest > len(sampler):
            raise ValueError(
                f"SeesawBatchSampler: the schedule reaches a batch of {largest} samples but the sampler holds "
                f"{len(sampler)}; lower the schedule's max_batch_size to at most {len(sampler)}"
            )
        self.sampler = sampler
        self.schedule = schedule

    def __len__(self) -> int:
        """The number of batches (serial optimizer steps) of the whole budget."""
        return self.schedule.serial_steps()

    def __iter__(self) -> Iterator[list[int]]:
        tokens, T = 0, self.schedule.tokens_per_sample
        source = iter(self.sampler)
        while tokens < self.schedule.total_tokens:
            size = min(self.schedule.batch_size(tokens), math.ceil((self.schedule.total_tokens - tokens) / T))
            batch: list[int] = []
            while len(batch) < size:
                try:
                    batch.append(next(source))
                except StopIteration:
                    source = iter(self.sampler)  # next epoch
            yield batch
            tokens += size * T
