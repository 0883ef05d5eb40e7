"""Certificates checked by a real proof assistant: every submitted statement as a Coq theorem compiled by ``coqc``.

The paper's guarantee is that every output is a Lean 4 statement whose proof the exploration built. Here the
exploration is checked by z3 (:mod:`iclr26.dexploration.kernel`) and its output is re-checked by Coq (8.16): the
statement Γ ⊢ U becomes ``Theorem t : forall (x : Z) (h1 : F1) ..., U`` whose proof script replays the exploration,
one ``assert (h_k : F_k)`` per deduced step, each closed on the premises the kernel named (``clear -`` the rest)
by asserting the products of bounds the kernel used (``Z.mul_nonneg_nonneg``) and ``lia`` (``nia`` and the whole
context as fall-backs), then ``exact`` the last step. ``coqc`` compiles the file and the kernel of Coq re-checks the
proof term at ``Qed``: a wrong step makes the file fail.

Batches: many theorems go into one ``.v`` file (one ``coqc`` call). If it fails, a screening file finds which
statements' scripts fail (``tryif assert (...) by (...) then idtac "ACCEPT i" else idtac "REJECT i"``), and the
accepted ones are compiled again as real theorems; so a batch costs one ``coqc`` call when every statement is
right, three otherwise.

Difficulty (the paper measures it by provers failing on the bare statement): ``bare_coq`` tries ``lia`` and ``nia``
(each with a time limit) on Γ ⊢ U without the exploration's steps, in one screening file.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from iclr26.dexploration.env import Entry, Statement
from iclr26.dexploration.logic import Fact

HEADER = "Require Import ZArith Lia.\nOpen Scope Z_scope.\n"
INSTALL_HINT = (
    "coqc (the Coq proof assistant, 8.16 or later) is not on PATH: run `make install` (it runs `apt-get install -y "
    "coq` on Debian/Ubuntu); elsewhere install Coq from your system's packages or with opam"
)


class CoqNotFound(RuntimeError):
    """``coqc`` is missing; the message says how to install it."""


def coqc_path() -> str:
    """The path of ``coqc``.

    Raises:
        CoqNotFound: if it is not on PATH.
    """
    path = shutil.which("coqc")
    if path is None:
        raise CoqNotFound(INSTALL_HINT)
    return path


@dataclass(frozen=True)
class CoqcRun:
    """One ``coqc`` call.

    Attributes:
        ok: exit status 0.
        output: stdout and stderr together (messages, or the first error with its line).
        timed_out: the call ran past its wall-clock limit and was stopped (then ``ok`` is False).
    """

    ok: bool
    output: str
    timed_out: bool = False


def run_coqc(source: str, *, timeout_s: float = 600.0) -> CoqcRun:
    """Compile ``source`` (a whole ``.v`` file) with ``coqc`` in a temporary folder.

    Raises:
        CoqNotFound: if ``coqc`` is missing.
    """
    coqc = coqc_path()
    with tempfile.TemporaryDirectory(prefix="dexploration-coq-") as tmp:
        path = Path(tmp) / "Certificate.v"
        path.write_text(source)
        try:
            proc = subprocess.run(
                [coqc, "-q", path.name], cwd=tmp, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            return CoqcRun(False, f"coqc timed out after {timeout_s} s", timed_out=True)
    return CoqcRun(proc.returncode == 0, proc.stdout + proc.stderr)


def _binder_names(st: Statement) -> list[str]:
    return [b.name for b in st.binders]


def coq_proposition(st: Statement) -> str:
    """``forall (x : Z) (h1 : F1) (y : Z) ..., U``: Γ's binders in introduction order."""
    binders = " ".join(f"({b.name} : Z)" if b.kind == "var" else f"({b.name} : {b.fact.coq()})" for b in st.binders)
    return f"forall {binders}, {st.conclusion.coq()}" if binders else st.conclusion.coq()


def _bound(f: Fact, sign: int) -> str:
    return f"(({f.rhs}) - ({f.coq_lhs()}))" if sign == 1 else f"(({f.coq_lhs()}) - ({f.rhs}))"


def _step_tactic(step: Entry | None, facts: dict[str, Fact], time_limit_s: int) -> str:
    """``lia`` on the kernel's premises after asserting the kernel's products (0 <= A * B by
    ``Z.mul_nonneg_nonneg``); falls back to ``nia`` and to the whole context."""
    lia, nia = f"timeout {time_limit_s} lia", f"timeout {time_limit_s} nia"
    premises = step.premises if step is not None else ()
    if not premises:
        return f"first [{lia} | {nia}]"
    keep = " ".join(premises)
    prods = "".join(
        f"assert (0 <= {_bound(facts[a], sa)} * {_bound(facts[b], sb)}) by (apply Z.mul_nonneg_nonneg; {lia}); "
        for (a, sa), (b, sb) in step.products
    )  # fmt: skip
    return f"first [clear - {keep}; {prods}{lia} | clear - {keep}; {nia} | {lia} | {nia}]"


def proof_script(st: Statement, *, time_limit_s: int = 10) -> str:
    """The tactic script replaying the exploration: ``intros``; one ``assert ... by`` per step; ``exact`` U."""
    parts = [f"intros {' '.join(_binder_names(st))}"] if st.binders else []
    facts = {b.name: b.fact for b in st.binders if b.fact is not None}
    for s in st.steps:
        parts.append(f"assert ({s.name} : {s.fact.coq()}) by ({_step_tactic(s, facts, time_limit_s)})")
        facts[s.name] = s.fact
    parts.append(f"exact {st.steps[-1].name}" if st.steps else f"{_step_tactic(None, facts, time_limit_s)}")
    return "; ".join(parts)


def coq_theorem(st: Statement, name: str, *, time_limit_s: int = 10) -> str:
    """The statement as a Coq theorem with the exploration's proof (a block of a ``.v`` file)."""
    return f"Theorem {name} : {coq_proposition(st)}.\nProof.\n  {proof_script(st, time_limit_s=time_limit_s)}.\nQed.\n"


def coq_file(statements: Sequence[Statement], *, time_limit_s: int = 10) -> str:
    """A whole ``.v`` file with one theorem ``t<i>`` per statement."""
    return HEADER + "\n".join(coq_theorem(s, f"t{i}", time_limit_s=time_limit_s) for i, s in enumerate(statements))


def _screen(props_and_scripts: Sequence[tuple[str, str]], timeout_s: float) -> list[bool]:
    """Which ``(proposition, script)`` pairs the script proves, in one ``coqc`` call (none when it times out)."""
    blocks = [
        f'Lemma screen{i} : True.\nProof.\n  tryif assert ({prop}) by ({script}) then idtac "ACCEPT {i}" '
        f'else idtac "REJECT {i}".\n  exact I.\nQed.\n'
        for i, (prop, script) in enumerate(props_and_scripts)
    ]
    run = run_coqc(HEADER + "\n".join(blocks), timeout_s=timeout_s)
    if run.timed_out:
        return [False] * len(props_and_scripts)
    if not run.ok:
        raise RuntimeError(f"the Coq screening file failed to compile:\n{run.output[-2000:]}")
    accepted = {int(m) for m in re.findall(r"ACCEPT (\d+)", run.output)}
    return [i in accepted for i in range(len(props_and_scripts))]


class Certifier(Protocol):
    """Re-checks submitted statements with a proof assistant (Coq here; Lean 4 where it is installed)."""

    def certify(self, statements: Sequence[Statement]) -> list[bool]:
        """Whether each statement's certificate is accepted."""
        ...


@dataclass(frozen=True)
class CoqCertifier:
    """Certificates compiled by ``coqc`` (module docstring).

    Args:
        time_limit_s: Coq ``timeout`` of each ``lia``/``nia`` call in a proof script.
        coqc_timeout_s: wall-clock limit of each ``coqc`` call; a call past it accepts nothing.
    """

    time_limit_s: int = 10
    coqc_timeout_s: float = 600.0

    def certify(self, statements: Sequence[Statement]) -> list[bool]:
        """Whether ``coqc`` accepts each statement's theorem (one call if all are right, three otherwise).

        Raises:
            CoqNotFound: if ``coqc`` is missing.
        """
        if not statements:
            return []
        limit = self.coqc_timeout_s
        if run_coqc(coq_file(statements, time_limit_s=self.time_limit_s), timeout_s=limit).ok:
            return [True] * len(statements)
        ok = _screen([(coq_proposition(s), proof_script(s, time_limit_s=self.time_limit_s)) for s in statements], limit)
        chosen = [s for s, good in zip(statements, ok, strict=True) if good]
        if chosen and not run_coqc(coq_file(chosen, time_limit_s=self.time_limit_s), timeout_s=limit).ok:
            # A script that passed the screening but not Qed (not expected): decide each one alone.
            ok = [good and run_coqc(coq_file([s], time_limit_s=self.time_limit_s), timeout_s=limit).ok for s, good in
                  zip(statements, ok, strict=True)]  # fmt: skip
        return ok


def bare_coq(
    statements: Sequence[Statement], *, time_limit_s: int = 2, coqc_timeout_s: float = 600.0
) -> dict[str, list[bool]]:
    """Whether ``lia`` and ``nia`` prove each bare statement Γ ⊢ U (no exploration steps), in one ``coqc`` call.

    A ``coqc`` call past ``coqc_timeout_s`` proves nothing.

    Returns:
        ``{"lia": [...], "nia": [...]}``, one bool per statement.
    """
    if not statements:
        return {"lia": [], "nia": []}
    pairs = []
    for st in statements:
        intro = f"intros {' '.join(_binder_names(st))}; " if st.binders else ""
        for tac in ("lia", "nia"):
            pairs.append((coq_proposition(st), f"{intro}timeout {time_limit_s} {tac}"))
    ok = _screen(pairs, coqc_timeout_s)
    return {"lia": ok[0::2], "nia": ok[1::2]}
