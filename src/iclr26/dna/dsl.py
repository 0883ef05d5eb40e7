"""EuclidDSL: the low-resource formal target language of the DNA reproduction (grammar, AST, types, abstractions).

Divide and Abstract (DNA), ICLR 2026, OpenReview NjgaeXNit3. The paper formalizes into Lean 4 (LeanEuclid's
Euclid-geometry DSL, and Mathlib); no Lean toolchain can be had offline, so this module defines a small DSL of the
same kind: LeanEuclid-style sorts and predicates with Lean-style application (``onLine a l``, the paper's
``formTriangle a b c l1 l2 l3`` convention), universally quantified statements ``premises -> conclusion``, and
non-recursive definitions (the abstractions DNA learns) that expand to primitives.

Grammar (ASCII; ``lark``, LALR)::

    statement  := "forall" binder+ "," formula "->" formula
    binder     := "(" NAME+ ":" SORT ")"          SORT in Point | Line | Circle
    formula    := conj ("\\/" conj)*
    conj       := unary ("/\\" unary)*
    unary      := "~" unary | "(" formula ")" | NAME NAME+ | NAME "=" NAME | NAME "!=" NAME
    definition := "def" NAME binder* ":=" formula

Deviations: the language is ours (not LeanEuclid's Lean syntax); no existential conclusions (they would take the
validator's z3 queries out of the decidable EPR fragment); ``a != b`` is ``~ (a = b)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "AND",
    "PRIMITIVES",
    "SORTS",
    "And",
    "Atom",
    "Definition",
    "DSLSyntaxError",
    "Formula",
    "Not",
    "Or",
    "Statement",
    "conjuncts",
    "conjunction",
    "expand",
    "parse_definition",
    "parse_formula",
    "parse_statement",
    "render",
    "type_errors",
]

SORTS = ("Point", "Line", "Circle")
#: The conjunction as written between clauses.
AND = " /\\ "

#: The DSL's primitive predicates and their argument sorts (a fragment of LeanEuclid's / System E's vocabulary).
PRIMITIVES: dict[str, tuple[str, ...]] = {
    "onLine": ("Point", "Line"),
    "between": ("Point", "Point", "Point"),
    "onCircle": ("Point", "Circle"),
    "inside": ("Point", "Circle"),
    "centre": ("Point", "Circle"),
    "sameSide": ("Point", "Point", "Line"),
}

_GRAMMAR = r"""
start_statement: "forall" binder+ "," formula "->" formula
start_definition: "def" NAME binder* ":=" formula
start_formula: formula
binder: "(" NAME+ ":" SORT ")"
?formula: conj ("\\/" conj)*  -> disj
?conj: unary ("/\\" unary)*   -> conjn
?unary: "~" unary             -> neg
      | "(" formula ")"
      | NAME NAME+            -> app
      | NAME "=" NAME         -> eq
      | NAME "!=" NAME        -> neq
SORT: "Point" | "Line" | "Circle"
NAME: /(?!forall\b|def\b)[a-z][A-Za-z0-9_]*/
%import common.WS
%ignore WS
"""


class DSLSyntaxError(ValueError):
    """A text is not in the DSL; the message says where (line, column) and what was expected."""


# ------------------------------------------------------------------------------------------------ AST
@dataclass(frozen=True)
class Atom:
    """``pred a1 ... an`` (a primitive or an abstraction), or ``a = b`` with ``pred == "="``."""

    pred: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Not:
    """``~ arg``."""

    arg: Formula


@dataclass(frozen=True)
class And:
    """``a1 /\\ ... /\\ an`` (n >= 2)."""

    args: tuple[Formula, ...]


@dataclass(frozen=True)
class Or:
    """``a1 \\/ ... \\/ an`` (n >= 2)."""

    args: tuple[Formula, ...]


Formula = Atom | Not | And | Or


@dataclass(frozen=True)
class Statement:
    """``forall (binders), premises -> conclusion``.

    Attributes:
        binders: ``(name, sort)`` pairs in binding order.
        premises: the hypotheses (one formula, usually a conjunction).
        conclusion: the goal.
    """

    binders: tuple[tuple[str, str], ...]
    premises: Formula
    conclusion: Formula

    def text(self) -> str:
        """The canonical text (binders grouped by consecutive sort)."""
        return render_statement(self)


@dataclass(frozen=True)
class Definition:
    """``def name (params) := body``: an abstraction of the library, expanded by substitution (no recursion)."""

    name: str
    params: tuple[tuple[str, str], ...]
    body: Formula

    @property
    def sorts(self) -> tuple[str, ...]:
        """The parameters' sorts, the definition's signature."""
        return tuple(s for _, s in self.params)

    def text(self) -> str:
        """The canonical text."""
        return f"def {self.name} {_render_binders(self.params)} := {render(self.body)}".replace("  ", " ")


# ------------------------------------------------------------------------------------------------ parsing
@lru_cache(maxsize=3)
def _parser(start: str):  # noqa: ANN202
    from lark import Lark

    return Lark(_GRAMMAR, start=start, parser="lalr")


def _parse(text: str, start: str):  # noqa: ANN202
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    try:
        return _parser(start).parse(text)
    except UnexpectedEOF as err:
        raise DSLSyntaxError(f"unexpected end of input; expected one of {sorted(err.expected)}") from None
    except UnexpectedToken as err:
        got = "end of input" if err.token.type == "$END" else repr(str(err.token))
        raise DSLSyntaxError(
            f"unexpected {got} at line {err.line}, column {err.column}; expected one of "
            f"{', '.join(_expected(start, err.expected))}"
        ) from None
    except UnexpectedCharacters as err:
        raise DSLSyntaxError(f"unexpected character {text[err.pos_in_stream]!r} at line {err.line}, "
                             f"column {err.column}") from None  # fmt: skip
    except UnexpectedInput as err:  # pragma: no cover - the three above are lark's concrete kinds
        raise DSLSyntaxError(str(err)) from None


def _expected(start: str, names) -> list[str]:  # noqa: ANN001
    """Terminal names as the text a user would type (``RPAR`` -> ``')'``, ``NAME`` -> ``a name``)."""
    out = set()
    for name in names:
        if name in ("NAME", "SORT"):
            out.add("a name" if name == "NAME" else "a sort (Point, Line, Circle)")
            continue
        try:
            out.add(repr(_parser(start).get_terminal(name).pattern.value))
        except KeyError:  # pragma: no cover - every terminal of the grammar is known
            out.add(name)
    return sorted(out)


def _formula(tree) -> Formula:  # noqa: ANN001
    kind = tree.data
    kids = tree.children
    if kind in ("disj", "conjn"):
        parts = [_formula(k) for k in kids]
        if len(parts) == 1:  # the rule's alias keeps a one-child node; it is just its child
            return parts[0]
        flat: list[Formula] = []
        cls = Or if kind == "disj" else And
        for part in parts:  # a parenthesised same-kind node is flattened: (a /\ b) /\ c is a /\ b /\ c
            flat.extend(part.args if isinstance(part, cls) else (part,))
        return cls(tuple(flat))
    if kind == "neg":
        return Not(_formula(kids[0]))
    if kind == "app":
        return Atom(str(kids[0]), tuple(str(k) for k in kids[1:]))
    if kind == "eq":
        return Atom("=", (str(kids[0]), str(kids[1])))
    if kind == "neq":
        return Not(Atom("=", (str(kids[0]), str(kids[1]))))
    raise DSLSyntaxError(f"unexpected node {kind!r}")  # pragma: no cover


def _binders(trees) -> tuple[tuple[str, str], ...]:  # noqa: ANN001
    out = []
    for b in trees:
        *names, sort = b.children
        out.extend((str(n), str(sort)) for n in names)
    return tuple(out)


def parse_formula(text: str) -> Formula:
    """Parse a formula (``onLine a l /\\ ~ between a b c``).

    Raises:
        DSLSyntaxError: with line, column and the expected tokens.
    """
    return _formula(_parse(text, "start_formula").children[0])


def parse_statement(text: str) -> Statement:
    """Parse ``forall (a b : Point) (l : Line), premises -> conclusion``.

    Raises:
        DSLSyntaxError: with line, column and the expected tokens.
    """
    tree = _parse(text, "start_statement")
    *binders, premises, conclusion = tree.children
    return Statement(_binders(binders), _formula(premises), _formula(conclusion))


def parse_definition(text: str) -> Definition:
    """Parse ``def name (a b : Point) (l : Line) := body``.

    Raises:
        DSLSyntaxError: with line, column and the expected tokens.
    """
    tree = _parse(text, "start_definition")
    name, *binders, body = tree.children
    return Definition(str(name), _binders(binders), _formula(body))


# ------------------------------------------------------------------------------------------------ rendering
def _render_binders(binders: tuple[tuple[str, str], ...]) -> str:
    groups: list[tuple[list[str], str]] = []
    for name, sort in binders:
        if groups and groups[-1][1] == sort:
            groups[-1][0].append(name)
        else:
            groups.append(([name], sort))
    return " ".join(f"({' '.join(ns)} : {s})" for ns, s in groups)


def render(f: Formula, *, _top: bool = True) -> str:
    """Canonical text of a formula; ``parse_formula(render(f)) == f`` for every formula with n-ary nodes flat."""
    if isinstance(f, Atom):
        return f"{f.args[0]} = {f.args[1]}" if f.pred == "=" else " ".join((f.pred, *f.args))
    if isinstance(f, Not):
        if isinstance(f.arg, Atom) and f.arg.pred == "=":
            return f"{f.arg.args[0]} != {f.arg.args[1]}"
        inner = render(f.arg, _top=False)
        return f"~ {inner}" if isinstance(f.arg, Atom | Not) else f"~ ({inner})"
    sep = " /\\ " if isinstance(f, And) else " \\/ "
    parts = [render(a, _top=False) if isinstance(a, Atom | Not) else f"({render(a, _top=False)})" for a in f.args]
    return sep.join(parts)


def render_statement(st: Statement) -> str:
    """``forall (binders), premises -> conclusion``."""
    return f"forall {_render_binders(st.binders)}, {render(st.premises)} -> {render(st.conclusion)}"


def conjuncts(f: Formula) -> tuple[Formula, ...]:
    """The top-level conjuncts of ``f`` (``(f,)`` unless ``f`` is an :class:`And`)."""
    return f.args if isinstance(f, And) else (f,)


def conjunction(parts: tuple[Formula, ...] | list[Formula]) -> Formula:
    """``parts[0]`` alone, or their :class:`And` with nested conjunctions flattened.

    Raises:
        ValueError: for no parts.
    """
    flat: list[Formula] = []
    for p in parts:
        flat.extend(conjuncts(p))
    if not flat:
        raise ValueError("conjunction of no formulas")
    return flat[0] if len(flat) == 1 else And(tuple(flat))


def atoms(f: Formula) -> Iterator[Atom]:
    """Every atom of ``f``, left to right."""
    if isinstance(f, Atom):
        yield f
    elif isinstance(f, Not):
        yield from atoms(f.arg)
    else:
        for a in f.args:
            yield from atoms(a)


# ------------------------------------------------------------------------------------------------ types
def signature(pred: str, library: Mapping[str, Definition]) -> tuple[str, ...] | None:
    """Argument sorts of ``pred`` (a primitive or an abstraction of ``library``), or None if unknown."""
    if pred in PRIMITIVES:
        return PRIMITIVES[pred]
    if pred in library:
        return library[pred].sorts
    return None


def type_errors(f: Formula, env: Mapping[str, str], library: Mapping[str, Definition]) -> list[str]:
    """Type errors of ``f`` under the variable sorts ``env``; empty when ``f`` is well-typed.

    Checks: every predicate is a primitive or an abstraction of ``library``; arity; every argument is bound and
    of the expected sort; ``=`` joins two variables of one sort.
    """
    errors: list[str] = []
    for a in atoms(f):
        for v in a.args:
            if v not in env:
                errors.append(f"unbound variable '{v}' in '{render(a)}'")
        if a.pred == "=":
            s = [env.get(v) for v in a.args]
            if None not in s and s[0] != s[1]:
                errors.append(f"'{render(a)}' compares a {s[0]} with a {s[1]}")
            continue
        sig = signature(a.pred, library)
        if sig is None:
            known = sorted(set(PRIMITIVES) | set(library))
            errors.append(f"unknown predicate '{a.pred}'; known: {', '.join(known)}")
            continue
        if len(sig) != len(a.args):
            errors.append(f"'{a.pred}' takes {len(sig)} arguments ({' '.join(sig)}), got {len(a.args)} "
                          f"in '{render(a)}'")  # fmt: skip
            continue
        for i, (v, want) in enumerate(zip(a.args, sig, strict=True)):
            got = env.get(v)
            if got is not None and got != want:
                errors.append(f"argument {i + 1} of '{a.pred}' must be a {want}, but '{v}' is a {got}")
    return errors


def statement_type_errors(st: Statement, library: Mapping[str, Definition]) -> list[str]:
    """Type errors of a statement: duplicate binders, then :func:`type_errors` of premises and conclusion."""
    names = [n for n, _ in st.binders]
    errors = [f"variable '{n}' is bound twice" for n in sorted({n for n in names if names.count(n) > 1})]
    env = dict(st.binders)
    return errors + type_errors(st.premises, env, library) + type_errors(st.conclusion, env, library)


def definition_type_errors(d: Definition, library: Mapping[str, Definition]) -> list[str]:
    """Type errors of a definition's body over its parameters (the library may not hold ``d`` itself)."""
    others = {k: v for k, v in library.items() if k != d.name}
    errors = [f"'{d.name}' shadows a primitive"] if d.name in PRIMITIVES else []
    errors += [f"'{d.name}' refers to itself"] if any(a.pred == d.name for a in atoms(d.body)) else []
    return errors + type_errors(d.body, dict(d.params), others)


# ------------------------------------------------------------------------------------------------ abstractions
def expand(f: Formula, library: Mapping[str, Definition], *, _depth: int = 0) -> Formula:
    """``f`` with every abstraction replaced by its body (parameters substituted), recursively, down to primitives.

    Raises:
        ValueError: if an abstraction's arity does not match, or expansion nests deeper than the library (a cycle).
    """
    if _depth > len(library) + 1:
        raise ValueError("abstraction expansion does not terminate: the library's definitions form a cycle")
    if isinstance(f, Atom):
        d = library.get(f.pred)
        if d is None:
            return f
        if len(d.params) != len(f.args):
            raise ValueError(f"'{f.pred}' takes {len(d.params)} arguments, got {len(f.args)}")
        sub = {p: a for (p, _), a in zip(d.params, f.args, strict=True)}
        return expand(substitute(d.body, sub), library, _depth=_depth + 1)
    if isinstance(f, Not):
        return Not(expand(f.arg, library, _depth=_depth))
    flat: list[Formula] = []
    for a in f.args:  # an abstraction's conjunction inside a conjunction is flattened (canonical n-ary form)
        e = expand(a, library, _depth=_depth)
        flat.extend(e.args if type(e) is type(f) else (e,))
    return type(f)(tuple(flat))


def substitute(f: Formula, sub: Mapping[str, str]) -> Formula:
    """``f`` with variables renamed by ``sub`` (names not in ``sub`` kept)."""
    if isinstance(f, Atom):
        return Atom(f.pred, tuple(sub.get(v, v) for v in f.args))
    if isinstance(f, Not):
        return Not(substitute(f.arg, sub))
    return type(f)(tuple(substitute(a, sub) for a in f.args))
