"""Seesaw (ICLR 2026, arXiv 2510.14717): a batch-size ramp in place of learning-rate decay, as a drop-in schedule.

Components:
    * :class:`Seesaw`: the (lr, batch size) schedule in tokens; a schedule for :func:`iclr26.common.lmtrain.train_lm`.
    * :class:`SeesawLR`: a ``torch.optim.lr_scheduler.LRScheduler`` (chainable, resumable) driving the learning rate
      and the AdamW weight-decay correction, which also says the next batch size.
    * :class:`SeesawBatchSampler`: a ``DataLoader`` batch sampler whose batch size follows the schedule.
    * :class:`CosineDecay`, :class:`StepDecay`: base decay curves.
    * :mod:`iclr26.seesaw.linreg`: the paper's noisy-linear-regression setting (exact risk recursion, Monte Carlo).
"""

from iclr26.seesaw.sampler import SeesawBatchSampler
from iclr26.seesaw.schedule import CosineDecay, Phase, Seesaw, StepDecay, StepRecord, cut_count, lr_decay_per_cut
from iclr26.seesaw.scheduler import SeesawLR

__all__ = [
    "CosineDecay",
    "Phase",
    "Seesaw",
    "SeesawBatchSampler",
    "SeesawLR",
    "StepDecay",
    "StepRecord",
    "cut_count",
    "lr_decay_per_cut",
]
