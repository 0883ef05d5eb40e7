"""CNF formulas and the DIMACS format: a validated container, a streaming reader with line-numbered errors, a writer.

Part of the RLAF module (Tönshoff & Grohe, "Learning from Algorithm Feedback: One-Shot SAT Solver Guidance with
GNNs", ICLR 2026, arXiv 2505.16053). Formulas use DIMACS literals: variable ``v`` is ``1..V``, literal ``+v`` is
"v is true", ``-v`` is "v is false".

The DIMACS reader accepts what real files contain: ``c`` comment lines anywhere, clauses split over several lines
or several clauses on one line (each ends at its ``0``), and SATLIB's ``%`` end-of-formula marker. It rejects, with
the line number in the message: text before the ``p cnf`` header, a malformed or repeated header, a token that is
not an integer, a literal beyond the declared variable count, an empty clause (``0`` with no literals, usually a
doubled terminator), a last clause without its terminating ``0``, and a clause count that disagrees with the header.

Files may be gzipped (recognised by their first bytes, whatever their name); comment lines may hold any byte but
NUL (read as Latin-1); a file whose other lines are not UTF-8 text, or that holds a NUL byte, is rejected as binary
with the line and byte offset, and a folder is rejected with a pointer to
:func:`read_dimacs_folder`, which reads every ``*.cnf`` / ``*.cnf.gz`` file under a folder.

Memory: a formula is refused, already at its ``p cnf`` header, when what solving it needs by
:func:`memory_estimate` exceeds this machine's physical memory: ``p cnf 10000000000 1`` fails at once with the
estimate instead of allocating per-variable arrays for minutes.

Deviations: an empty clause is rejected although DIMACS allows it (it makes the formula trivially UNSAT and in
practice is a formatting error); build such a formula with :class:`CNF` directly if it is wanted.
"""

from __future__ import annotations

import gzip
import io
import numbers
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

__all__ = [
    "CNF",
    "DimacsError",
    "memory_estimate",
    "parse_dimacs",
    "read_dimacs",
    "read_dimacs_folder",
    "to_dimacs",
    "write_dimacs",
]

#: Bytes per variable that solving needs at least: the project's CDCL keeps, per variable, two watch lists (empty
#: Python lists, 56 bytes each, plus an 8-byte slot each), 8-byte slots in eight per-variable lists (two values
#: per variable, level, reason, seen, activity, bump scale, phase) and a heap entry (a 2-tuple of 56 bytes, a
#: 24-byte float and an 8-byte slot): 2·64 + 8·8 + 88 = 280.
BYTES_PER_VARIABLE = 280
#: Bytes per literal occurrence: an 8-byte slot in a clause list and a 32-byte int in the DIMACS tuple.
BYTES_PER_LITERAL = 40
_GZIP_MAGIC = b"\x1f\x8b"


class DimacsError(ValueError):
    """A DIMACS text is malformed; the message starts with the offending line number."""


def memory_estimate(num_vars: int, num_literals: int = 0) -> int:
    """A lower bound on the bytes that solving a formula needs: ``280·V + 40·(literal occurrences)``.

    See :data:`BYTES_PER_VARIABLE` and :data:`BYTES_PER_LITERAL` for the count. The GNN's graph needs more
    (``(2V + C) × channels`` floats per layer), so a formula refused here could not be guided either.
    """
    return BYTES_PER_VARIABLE * num_vars + BYTES_PER_LITERAL * num_literals


def _physical_memory() -> int | None:
    """This machine's physical memory in bytes, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _check_memory(num_vars: int, what: str) -> None:
    """Raise a ValueError (prefixed by ``what``) if a formula with ``num_vars`` variables cannot fit in memory."""
    need, have = memory_estimate(num_vars), _physical_memory()
    if have is not None and need > have:
        raise ValueError(
            f"{what}: {num_vars} variables need at least {_size(need)} to solve ({BYTES_PER_VARIABLE} bytes per "
            f"variable), more than this machine's {_size(have)} of memory (a typo in the variable count?)"
        )


def _size(n: int) -> str:
    """Bytes as GiB (from 1 GiB on) or MiB, one decimal."""
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


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
        if not isinstance(self.num_vars, numbers.Integral) or isinstance(self.num_vars, bool):
            raise TypeError(f"num_vars must be an integer, got {self.num_vars!r} ({type(self.num_vars).__name__})")
        if self.num_vars < 0:
            raise ValueError(f"num_vars must be a non-negative integer, got {self.num_vars!r}")
        _check_memory(int(self.num_vars), "num_vars")
        if isinstance(self.clauses, str | bytes) or not isinstance(self.clauses, Iterable):
            raise TypeError(f"clauses must be a sequence of clauses, got {type(self.clauses).__name__}")
        for i, clause in enumerate(self.clauses):
            if isinstance(clause, str | bytes) or not isinstance(clause, Sequence):
                raise TypeError(
                    f"clauses[{i}] must be a sequence of integer literals, got {clause!r} ({type(clause).__name__})"
                )
            for j, lit in enumerate(clause):
                if not isinstance(lit, numbers.Integral) or isinstance(lit, bool):
                    raise TypeError(
                        f"clauses[{i}][{j}]: literal {lit!r} is a {type(lit).__name__}, not an integer "
                        f"(DIMACS literals are ±1..±num_vars)"
                    )
                if lit == 0 or abs(lit) > self.num_vars:
                    raise ValueError(
                        f"clauses[{i}][{j}]: literal {lit} is out of range for num_vars={self.num_vars} "
                        f"(literals are ±1..±num_vars; 0 only ends a clause in DIMACS text)"
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
        source: a file path (``str`` or ``Path``; plain or gzipped), a text stream, or an iterable of lines.

    Returns:
        The formula, with ``num_vars`` as declared by the header.

    Raises:
        DimacsError: for malformed input, a binary (non-UTF-8 or NUL-holding) file, or a header whose variable
            count cannot fit in memory; the message names the line (see the module docstring).
        FileNotFoundError: if a path does not exist.
        IsADirectoryError: if a path is a folder (:func:`read_dimacs_folder` reads a folder of formulas).
    """
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir():
            raise IsADirectoryError(
                f"read_dimacs: {str(path)!r} is a folder, not a DIMACS file; pass one .cnf file, or use "
                "read_dimacs_folder to read every .cnf / .cnf.gz file under a folder"
            )
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == _GZIP_MAGIC
        opener = gzip.open if gzipped else open
        with opener(path, "rb") as handle:
            try:
                return _read_lines(_decoded_lines(handle))
            except (OSError, EOFError) as err:  # a damaged gzip stream
                raise DimacsError(f"{path}: cannot be read as gzip ({err})") from None
    return _read_lines(source)


def read_dimacs_folder(folder: str | Path) -> dict[str, CNF]:
    """Every ``*.cnf`` and ``*.cnf.gz`` file under ``folder`` (recursively), read with :func:`read_dimacs`.

    Args:
        folder: the folder.

    Returns:
        Relative path (POSIX) → formula, sorted by relative path.

    Raises:
        FileNotFoundError: if ``folder`` does not exist.
        NotADirectoryError: if it is a file.
        ValueError: if it holds no ``.cnf`` / ``.cnf.gz`` file, or a file fails to read (a :class:`DimacsError`
            whose message starts with the file's relative path).
    """
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"{str(root)!r} does not exist; pass a folder of DIMACS .cnf files")
    if not root.is_dir():
        raise NotADirectoryError(f"{str(root)!r} is a file, not a folder; pass the folder that holds the .cnf files")
    files = sorted(
        (p.relative_to(root).as_posix(), p)
        for p in root.rglob("*")
        if p.is_file() and p.name.lower().endswith((".cnf", ".cnf.gz"))
    )
    if not files:
        raise ValueError(f"{str(root)!r} holds no .cnf or .cnf.gz file")
    out = {}
    for rel, path in files:
        try:
            out[rel] = read_dimacs(path)
        except (DimacsError, ValueError, TypeError, OSError) as err:
            raise DimacsError(f"{rel}: {err}") from None
    return out


def parse_dimacs(text: str) -> CNF:
    """Parse DIMACS CNF text held in a string (see :func:`read_dimacs`)."""
    return _read_lines(io.StringIO(text))


def _decoded_lines(handle: BinaryIO) -> Iterator[str]:
    """The lines of a binary stream as text.

    Comment lines (``c ...`` and what follows SATLIB's ``%`` marker) are decoded as Latin-1, so any byte but NUL is
    accepted there (files from older generators carry Latin-1 names in their comments); every other line must be
    UTF-8. A NUL byte anywhere, or a non-UTF-8 byte outside a comment, raises DimacsError (a binary file).
    """
    offset = 0
    trailer = False  # after SATLIB's '%' line, everything is free text
    for number, raw in enumerate(handle, start=1):
        bad = raw.find(b"\0")
        stripped = raw.lstrip()
        trailer = trailer or stripped.startswith(b"%")
        try:
            line = raw.decode("latin-1" if trailer or stripped.startswith(b"c") else "utf-8")
        except UnicodeDecodeError as err:
            bad = err.start if bad < 0 else min(bad, err.start)
        if bad >= 0:
            raise DimacsError(
                f"line {number}: byte {raw[bad]:#04x} at offset {offset + bad} is not DIMACS text (UTF-8 without NUL "
                "bytes): a binary or compressed file"
            )
        offset += len(raw)
        yield line


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
            try:
                _check_memory(num_vars, f"line {number}: header {stripped!r}")
            except ValueError as err:
                raise DimacsError(str(err)) from None
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
