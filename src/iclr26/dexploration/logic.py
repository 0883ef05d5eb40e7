"""The formal language of the exploration: integer polynomial (in)equalities over typed integer variables.

A :class:`Fact` is ``p <= c`` or ``p = c`` with ``p`` an integer polynomial without constant term and ``c`` an
integer, e.g. ``- x * y + 3 * x <= 6``. Facts are written as token sequences (the agent's language), as z3 terms
(the SMT kernel, :mod:`iclr26.dexploration.kernel`) and as Coq ``Z`` propositions (the certificate,
:mod:`iclr26.dexploration.coq`). Linear facts are decidable (Presburger); products of facts make the fragment
non-linear, so bare statements can be out of reach of ``lia``/``nia`` while every single step stays easy.

The two forward rules of the generated corpus (:mod:`iclr26.dexploration.corpus`) live here as pure functions:
``rule_add`` (sum of two facts) and ``rule_mul`` (product of two upper bounds: ``p <= c`` and ``q <= d`` give
``(c - p)(d - q) >= 0``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

#: The integer variables an agent may introduce (all of type Z).
VARIABLES = ("x", "y", "z", "w")
RELATIONS = ("<=", "=")

Monomial = tuple[str, ...]  # sorted variable names, with repetition: ("x", "x", "y") is x^2 y
Poly = tuple[tuple[Monomial, int], ...]  # canonical: sorted, no zero coefficients, no constant monomial


class ParseError(ValueError):
    """A token sequence is not a well-formed fact; the message says where and why."""


def _mono_key(m: Monomial) -> tuple[int, Monomial]:
    return (-len(m), m)


def poly(terms: dict[Monomial, int] | Iterable[tuple[Monomial, int]]) -> Poly:
    """The canonical polynomial of ``terms`` (monomial -> coefficient; repeated monomials are summed).

    Raises:
        ValueError: for a constant monomial ``()`` or an unknown variable.
    """
    acc: dict[Monomial, int] = {}
    for mono, coef in terms.items() if isinstance(terms, dict) else terms:
        if not mono:
            raise ValueError("a polynomial's constant goes to the right-hand side of the fact, not into p")
        for v in mono:
            if v not in VARIABLES:
                raise ValueError(f"unknown variable {v!r}; variables are {', '.join(VARIABLES)}")
        key = tuple(sorted(mono))
        acc[key] = acc.get(key, 0) + int(coef)
    return tuple(sorted(((m, c) for m, c in acc.items() if c != 0), key=lambda mc: _mono_key(mc[0])))


def poly_add(p: Poly, q: Poly, *, scale: int = 1) -> Poly:
    """``p + scale * q``."""
    return poly([*p, *((m, scale * c) for m, c in q)])


def poly_mul(p: Sequence[tuple[Monomial, int]], q: Sequence[tuple[Monomial, int]]) -> dict[Monomial, int]:
    """``p * q`` as a monomial -> coefficient dict that may hold the constant monomial ``()``."""
    out: dict[Monomial, int] = {}
    for m1, c1 in p:
        for m2, c2 in q:
            key = tuple(sorted(m1 + m2))
            out[key] = out.get(key, 0) + c1 * c2
    return out


def degree(p: Poly) -> int:
    """Total degree of ``p`` (0 for the zero polynomial)."""
    return max((len(m) for m, _ in p), default=0)


@dataclass(frozen=True)
class Fact:
    """``lhs rel rhs``: ``lhs`` a canonical polynomial without constant, ``rel`` in ``<=``/``=``, ``rhs`` an int.

    Attributes:
        lhs: the polynomial p.
        rel: ``"<="`` or ``"="``.
        rhs: the constant c.
    """

    lhs: Poly
    rel: Literal["<=", "="]
    rhs: int

    def __post_init__(self) -> None:
        if self.rel not in RELATIONS:
            raise ValueError(f"rel must be one of {RELATIONS}, got {self.rel!r}")
        if poly(self.lhs) != self.lhs:
            raise ValueError("lhs must be canonical: build it with poly(...)")

    @property
    def variables(self) -> frozenset[str]:
        """The variables the fact mentions."""
        return frozenset(v for m, _ in self.lhs for v in m)

    @property
    def degree(self) -> int:
        """Total degree of the left-hand side."""
        return degree(self.lhs)

    def tokens(self) -> list[str]:
        """The fact in the agent's token language, e.g. ``['-', 'x', '*', 'y', '+', '3', '*', 'x', '<=', '6']``."""
        out: list[str] = []
        if not self.lhs:
            out.append("0")
        for i, (mono, coef) in enumerate(self.lhs):
            if coef < 0:
                out.append("-")
            elif i > 0:
                out.append("+")
            if abs(coef) != 1:
                out.extend(list(str(abs(coef))))
                out.append("*")
            for j, v in enumerate(mono):
                if j:
                    out.append("*")
                out.append(v)
        out.append(self.rel)
        if self.rhs < 0:
            out.append("-")
        out.extend(list(str(abs(self.rhs))))
        return out

    def text(self) -> str:
        """The tokens joined by spaces."""
        return " ".join(self.tokens())

    def coq_lhs(self) -> str:
        """The left-hand side as a Coq ``Z`` expression."""
        return " + ".join(f"({c}) * " + " * ".join(m) for m, c in self.lhs) or "0"

    def coq(self) -> str:
        """The fact as a Coq proposition over ``Z`` (``Open Scope Z_scope``)."""
        return f"{self.coq_lhs()} {self.rel} ({self.rhs})"

    def bound(self, sign: int) -> Fact:
        """The upper bound ``sign * p <= sign * c`` this fact gives (an equation gives both signs).

        Raises:
            ValueError: for ``sign = -1`` on an inequality, or a sign other than ±1.
        """
        if sign not in (1, -1) or (sign == -1 and self.rel != "="):
            raise ValueError("an inequality gives only sign +1; an equation gives +1 and -1")
        return Fact(poly((m, sign * c) for m, c in self.lhs), "<=", sign * self.rhs)

    def holds_at(self, point: dict[str, int]) -> bool:
        """Whether the fact is true at the integer point ``point`` (variable -> value)."""
        value = 0
        for mono, coef in self.lhs:
            term = coef
            for v in mono:
                term *= point[v]
            value += term
        return value <= self.rhs if self.rel == "<=" else value == self.rhs


def parse_number(tokens: Sequence[str], i: int) -> tuple[int, int]:
    """Read digits starting at ``tokens[i]``; return ``(value, next index)``.

    Raises:
        ParseError: if ``tokens[i]`` is not a digit, or the number has a leading zero or more than 6 digits.
    """
    j = i
    while j < len(tokens) and tokens[j].isdigit() and len(tokens[j]) == 1:
        j += 1
    if j == i:
        got = tokens[i] if i < len(tokens) else "end of fact"
        raise ParseError(f"expected a number at token {i}, got {got!r}")
    digits = "".join(tokens[i:j])
    if len(digits) > 1 and digits[0] == "0":
        raise ParseError(f"number {digits} at token {i} has a leading zero")
    if len(digits) > 6:
        raise ParseError(f"number at token {i} has more than 6 digits")
    return int(digits), j


def parse_fact(tokens: Sequence[str]) -> Fact:
    """Parse a fact written as by :meth:`Fact.tokens` (constants may also appear on the left; they move right).

    Raises:
        ParseError: naming the token where the fact stops being well-formed.
    """
    toks = list(tokens)
    rel_at = [i for i, t in enumerate(toks) if t in RELATIONS]
    if len(rel_at) != 1:
        raise ParseError(f"a fact needs exactly one relation (<= or =), found {len(rel_at)}")
    r = rel_at[0]
    if r == 0:
        raise ParseError("the left-hand side is empty")
    terms: list[tuple[Monomial, int]] = []
    const = 0
    i = 0
    first = True
    while i < r:
        sign = 1
        if toks[i] in ("+", "-"):
            sign = -1 if toks[i] == "-" else 1
            i += 1
        elif not first:
            raise ParseError(f"expected + or - at token {i}, got {toks[i]!r}")
        first = False
        if i >= r:
            raise ParseError(f"a term is missing after the sign at token {i - 1}")
        coef = 1
        has_coef = False
        if toks[i].isdigit():
            coef, i = parse_number(toks, i)
            has_coef = True
            if i < r and toks[i] == "*":
                i += 1
            else:
                const += sign * coef
                continue
        mono: list[str] = []
        while True:
            if i >= r or toks[i] not in VARIABLES:
                got = toks[i] if i < r else toks[r]
                raise ParseError(f"expected a variable at token {i}, got {got!r}")
            mono.append(toks[i])
            i += 1
            if i < r and toks[i] == "*":
                i += 1
                continue
            break
        if has_coef and coef == 0:
            raise ParseError(f"zero coefficient before token {i}")
        terms.append((tuple(mono), sign * coef))
    j = r + 1
    sign = 1
    if j < len(toks) and toks[j] == "-":
        sign, j = -1, j + 1
    value, j = parse_number(toks, j)
    if j != len(toks):
        raise ParseError(f"unexpected token {toks[j]!r} after the right-hand side")
    return Fact(poly(terms), toks[r], sign * value - const)  # type: ignore[arg-type]


def fact(text: str) -> Fact:
    """Parse a fact from space-separated text, e.g. ``fact("x + y <= 3")`` (tests and examples)."""
    return parse_fact(text.split())


def rule_add(a: Fact, b: Fact, *, scale: int = 1) -> Fact:
    """``a + scale * b``: two facts summed (``scale = -1`` subtracts an equation).

    Raises:
        ValueError: if ``scale`` is negative and ``b`` is an inequality (the sum would not follow).
    """
    if scale < 0 and b.rel != "=":
        raise ValueError("only an equation may be subtracted")
    rel = "=" if a.rel == "=" and b.rel == "=" else "<="
    return Fact(poly_add(a.lhs, b.lhs, scale=scale), rel, a.rhs + scale * b.rhs)  # type: ignore[arg-type]


def rule_mul(a: Fact, b: Fact) -> Fact:
    """The product of two upper bounds: ``p <= c`` and ``q <= d`` give ``(c - p)(d - q) >= 0``, i.e.

    ``p q - d p - c q >= - c d``, written ``- p q + d p + c q <= c d``.

    Raises:
        ValueError: if either fact is an equation.
    """
    if a.rel != "<=" or b.rel != "<=":
        raise ValueError("rule_mul multiplies two inequalities p <= c and q <= d")
    c, d = a.rhs, b.rhs
    # (c - p)(d - q) = cd - c q - d p + p q >= 0  <=>  -p q + d p + c q <= c d
    prod = poly_mul(a.lhs, b.lhs)
    terms = [(m, -k) for m, k in prod.items()] + [(m, d * k) for m, k in a.lhs] + [(m, c * k) for m, k in b.lhs]
    return Fact(poly(terms), "<=", c * d)
