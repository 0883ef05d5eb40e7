"""CNF formulas and the DIMACS format: a validated container, a streaming reader with line-numbered errors, a writer.

Part of the RLAF module (Tönshoff & Grohe, "Learning from Algorithm Feedback: One-Shot SAT Solver Guidance with
GNNs", ICLR 2026, arXiv 2505.16053). Formulas use DIMACS literals: variable ``v`` is ``1..V``, literal ``+v`` is
"v is true", ``-v`` is "v is false".

The DIMACS reader accepts what real files contain: ``c`` comment lines anywhere, clauses split over several lines
or several clauses on one line (each ends at its ``0``), and SATLIB's ``%`` end-of-formula marker. It rejects, with
the line number in the message: text before the ``p cnf`` header, a malformed or repeated header, a token that is
not an integer, a literal beyond the declared variable count, an empty clause (``0`` with no literals, usually a
doubled terminator), a last clause without its terminating ``0``, and a clause count that disagrees with the header.

Deviations: an empty clause is rejected although DIMACS allows it (it makes the formula trivially UNSAT and in
practice is a formatting error); build such a formula with :class:`CNF` directly if it is wanted.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = ["CNF", "DimacsError", "read_dimacs", "parse_dimacs", "write_dimacs", "to_dimacs"]


class DimacsError(ValueError):
    """A DIMACS text is malformed; the message starts with the offending line number."""


@dataclass(frozen=True)
class CNF:
    """A formula in conjunctive normal form.

    Attributes:
        num_vars: the number of variables ``V``; literals range over ``±1..±V``.
        clauses: the clauses, each a tuple of non-zero DIMACS literals.
    """

    num_vars: int
    clauses: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        if not isinstance(self.num_vars, int) or self.num_vars < 0:
            raise ValueError(f"num_vars must be a non-negative integer, got {self.num_vars!r}")
        for i, clause in enumerate(self.clauses):
            for lit in clause:
                if lit == 0 or abs(lit) > self.num_vars:
                    raise ValueError(
                        f"clauses[{i}]: literal {lit} is out of range for num_vars={self.num_vars} "
                        f"(literals are ±1..±num_vars)"
                    )

    @classmethod
    def from_clauses(cls, clauses: Iterable[Sequence[int]], num_vars: int | None = None) -> CNF:
        """Build a CNF from any iterable of integer sequences (e.g. ``cnfgen``'s ``formula.clauses()``).

        Args:
            clauses: clauses as sequences of DIMACS literals.
            num_vars: the variable count; ``None`` takes the largest variable that occurs.
        """
        frozen = tuple(tuple(int(lit) for lit in clause) for clause in clauses)
        if num_vars is None:
            num_vars = max((abs(lit) for clause in frozen for lit in clause), default=0)
        return cls(num_vars=num_vars, clauses=frozen)

    @property
    def num_clauses(self) -> int:
        """The number of clauses ``C``."""
        return len(self.clauses)

    def is_satisfied_by(self, model: Sequence[int]) -> bool:
        """Whether a model (DIMACS literals, one per variable, e.g. ``[1, -2, 3]``) satisfies every clause.

        A variable missing from ``model`` counts as unassigned, so a clause needing it is unsatisfied.
        """
        true_lits = set(model)
        return all(any(lit in true_lits for lit in clause) for clause in self.clauses)


def read_dimacs(source: str | Path | TextIO | Iterable[str]) -> CNF:
    """Read a DIMACS CNF from a path, an open text file or any iterable of lines, one line at a time.

    Args:
        source: a file path (``str`` or ``Path``), a text stream, or an iterable of lines.

    Returns:
        The formula, with ``num_vars`` as declared by the header.

    Raises:
        DimacsError: for malformed input; the message names the line (see the module docstring).
        FileNotFoundError: if a path does not exist.
    """
    if isinstance(source, str | Path):
        with open(source, encoding="utf-8") as handle:
            return _read_lines(handle)
    return _read_lines(source)


def parse_dimacs(text: str) -> CNF:
    """Parse DIMACS CNF text held in a string (see :func:`read_dimacs`)."""
    return _read_lines(io.StringIO(text))


def _read_lines(lines: Iterable[str]) -> CNF:
    header_line = 0
    num_vars = num_clauses = -1
    clauses: list[tuple[int, ...]] = []
    current: list[int] = []
    current_start = 0
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("c"):
            continue
        if stripped.startswith("%"):
            break  # SATLIB's end-of-formula marker; anything after it is not part of the formula
        if stripped.startswith("p"):
            if header_line:
                raise DimacsError(f"line {number}: a second 'p' header (the first is on line {header_line})")
            parts = stripped.split()
            if len(parts) != 4 or parts[1] != "cnf" or not all(p.isdigit() for p in parts[2:]):
                raise DimacsError(
                    f"line {number}: malformed header {stripped!r}; expected 'p cnf <variables> <clauses>' "
                    f"with non-negative integers"
                )
            header_line, num_vars, num_clauses = number, int(parts[2]), int(parts[3])
            continue
        if not header_line:
            raise DimacsError(f"line {number}: clause data before the 'p cnf <variables> <clauses>' header")
        for token in stripped.split():
            try:
                lit = int(token)
            except ValueError:
                raise DimacsError(f"line {number}: token {token!r} is not an integer literal") from None
            if lit == 0:
                if not current:
                    raise DimacsError(
                        f"line {number}: empty clause (a '0' with no literals before it; a doubled terminator?)"
                    )
                clauses.append(tuple(current))
                current = []
                continue
            if abs(lit) > num_vars:
                raise DimacsError(
                    f"line {number}: literal {lit} is out of range for the {num_vars} variables declared on "
                    f"line {header_line}"
                )
            if not current:
                current_start = number
            current.append(lit)
    if not header_line:
        raise DimacsError("line 1: no 'p cnf <variables> <clauses>' header found")
    if current:
        raise DimacsError(
            f"line {current_start}: the clause starting here is not terminated by '0' (end of input reached)"
        )
    if len(clauses) != num_clauses:
        raise DimacsError(
            f"line {header_line}: the header declares {num_clauses} clauses but the body has {len(clauses)}"
        )
    return CNF(num_vars=num_vars, clauses=tuple(clauses))


def _dimacs_lines(cnf: CNF, comments: Sequence[str]) -> Iterator[str]:
    for comment in comments:
        for part in comment.splitlines() or [""]:
            yield f"c {part}".rstrip() + "\n"
    yield f"p cnf {cnf.num_vars} {cnf.num_clauses}\n"
    for clause in cnf.clauses:
        yield " ".join(map(str, clause)) + " 0\n"


def write_dimacs(cnf: CNF, dest: str | Path | TextIO, *, comments: Sequence[str] = ()) -> None:
    """Write ``cnf`` in DIMACS format, one clause per line, streaming to a path or an open text file.

    Args:
        cnf: the formula.
        dest: a file path or a writable text stream.
        comments: lines written as ``c ...`` comments before the header.
    """
    if isinstance(dest, str | Path):
        with open(dest, "w", encoding="utf-8") as handle:
            handle.writelines(_dimacs_lines(cnf, comments))
    else:
        dest.writelines(_dimacs_lines(cnf, comments))


def to_dimacs(cnf: CNF, *, comments: Sequence[str] = ()) -> str:
    """The DIMACS text of ``cnf`` as a string (see :func:`write_dimacs`)."""
    return "".join(_dimacs_lines(cnf, comments))
