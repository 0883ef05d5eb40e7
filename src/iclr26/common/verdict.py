"""The verdict of a reproduction: ``held``, ``not held`` or ``inconclusive``, and the gates it rests on.

A paper's ``verdict.py`` holds one pure function ``verdict(measurements, config) -> Verdict`` over plain per-seed or
per-item numbers, so that a test can feed it synthetic numbers and flip each part. Its three outcomes:

- ``held``: every gate passed, the method beat its baseline by the configured margin, and every control that must
  fail did fail;
- ``not held``: every gate passed, but the comparison (or a control) did not come out as the claim says;
- ``inconclusive``: a gate failed, so the test bed could not have shown the effect (the base model never learned
  what the method improves, a trivial solution passes the metric, the component under test never acted). The
  record names the failed gates.

A gate is a named condition with the measured value and its threshold (a config field whose help text gives the
source, :func:`iclr26.common.config.threshold`), fixed before the run::

    gates = [Gate("pose_head_learned", ate_static < ate_constant, {"ate_static": ..., "ate_constant": ...})]
    return Verdict.decide(gates, held=main.passes and not control.passes, evidence={...}, measurement="...")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

HELD = "held"
NOT_HELD = "not held"
INCONCLUSIVE = "inconclusive"
STATUSES = (HELD, NOT_HELD, INCONCLUSIVE)
Status = Literal["held", "not held", "inconclusive"]


@dataclass(frozen=True)
class Gate:
    """A condition the test bed must meet before the claim's comparison counts.

    Attributes:
        name: a short identifier, e.g. ``"pose_head_beats_constant"``; the record lists failed gates by it.
        passed: whether the condition holds in this run.
        detail: the numbers it was decided on (measured value, threshold), JSON-able.
    """

    name: str
    passed: bool
    detail: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError("Gate.name must be a non-empty string")
        object.__setattr__(self, "passed", bool(self.passed))

    def record(self) -> dict[str, Any]:
        """The gate as the record's evidence holds it."""
        return {"passed": self.passed, **dict(self.detail)}


@dataclass(frozen=True)
class Verdict:
    """The outcome of a paper's claim check.

    Attributes:
        status: ``"held"``, ``"not held"`` or ``"inconclusive"``.
        evidence: the numbers the verdict rests on (comparisons, controls, thresholds with sources); when built by
            :meth:`decide` it also holds ``"gates"`` (name -> :meth:`Gate.record`).
        measurement: one line for the report's "our measurement" column.
        failed_gates: the names of the gates that failed (non-empty exactly when ``status`` is inconclusive).
        notes: optional caveats for the record.
    """

    status: Status
    evidence: dict[str, Any]
    measurement: str
    failed_gates: tuple[str, ...] = ()
    notes: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Verdict.status must be one of {STATUSES}, got {self.status!r}")
        if (self.status == INCONCLUSIVE) != bool(self.failed_gates):
            raise ValueError("Verdict: status 'inconclusive' goes with at least one failed gate, and only with one")
        if not self.measurement.strip():
            raise ValueError("Verdict.measurement must be a non-empty one-line summary")

    @property
    def held(self) -> bool:
        """Whether the claim held (False for ``not held`` and ``inconclusive``)."""
        return self.status == HELD

    @classmethod
    def decide(
        cls,
        gates: Iterable[Gate],
        *,
        held: bool,
        evidence: dict[str, Any],
        measurement: str,
        notes: str = "",
    ) -> Verdict:
        """The verdict from the gates and the comparison's outcome.

        Args:
            gates: the test bed's gates; any failed one makes the verdict ``inconclusive`` whatever ``held`` says.
            held: whether the comparison and its controls came out as the claim says.
            evidence: the numbers the verdict rests on; ``"gates"`` is added (an existing key is an error).
            measurement: one line for the report (a failed gate is appended to it).
            notes: optional caveats.

        Raises:
            ValueError: if ``evidence`` already has a ``"gates"`` key or two gates share a name.
        """
        gates = list(gates)
        names = [g.name for g in gates]
        if len(set(names)) != len(names):
            raise ValueError(f"gate names must be unique, got {names}")
        if "gates" in evidence:
            raise ValueError("evidence must not hold a 'gates' key; Verdict.decide adds it")
        failed = tuple(g.name for g in gates if not g.passed)
        status: Status = INCONCLUSIVE if failed else (HELD if held else NOT_HELD)
        if failed:
            measurement = f"{measurement.rstrip('. ')}; gate failed: {', '.join(failed)}"
        evidence = {**evidence, "gates": {g.name: g.record() for g in gates}}
        return cls(status, evidence, measurement, failed, notes)


def status_of(claim_held: Any) -> str:
    """The verdict word of a record's ``claim_held`` (records before the third value hold ``true``/``false``).

    Raises:
        ValueError: for a value that is neither a status nor a bool.
    """
    if claim_held is True:
        return HELD
    if claim_held is False:
        return NOT_HELD
    if claim_held in STATUSES:
        return claim_held
    raise ValueError(f"claim_held must be one of {STATUSES} (or a bool in older records), got {claim_held!r}")


__all__ = ["HELD", "INCONCLUSIVE", "NOT_HELD", "STATUSES", "Gate", "Status", "Verdict", "status_of"]
