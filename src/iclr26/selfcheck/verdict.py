"""The built-in check's verdict: the trained tiny LM's validation loss must fall below a uniform guess over bytes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from iclr26.common.verdict import Gate, Verdict


@dataclass(frozen=True)
class Measurements:
    """What the check measured.

    Attributes:
        final_val_loss: validation cross-entropy (nats) after training.
        params_changed: parameter tensors the training changed.
        steps: optimizer steps taken.
    """

    final_val_loss: float
    params_changed: int
    steps: int


def verdict(m: Measurements) -> Verdict:
    """Held when the validation loss is below ``ln 256``; inconclusive when training changed no parameter."""
    uniform = math.log(256)  # cross-entropy of a uniform guess over 256 byte values
    gates = [Gate("training_changed_parameters", m.params_changed > 0, {"params_changed": m.params_changed})]
    return Verdict.decide(
        gates,
        held=m.final_val_loss < uniform,
        evidence={
            "final_val_loss": m.final_val_loss,
            "uniform_loss": uniform,
            "thresholds": {"uniform_loss": {"value": uniform, "source": "cross-entropy of a uniform guess, ln 256"}},
        },
        measurement=f"val loss {m.final_val_loss:.3f} nats after {m.steps} steps (ln 256 = {uniform:.3f})",
    )
