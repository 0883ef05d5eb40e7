"""DIMACS reader/writer: round trips, the formats real files use, and line-numbered errors."""

from __future__ import annotations

import io

import pytest

from iclr26.rlaf.cnf import CNF, DimacsError, parse_dimacs, read_dimacs, to_dimacs, write_dimacs
from iclr26.rlaf.generators import coloring_3, random_3sat


def test_round_trip_through_string_stream_and_file(tmp_path):
    cnf = CNF(num_vars=4, clauses=((1, -2, 3), (-4,), (2, 4)))
    text = to_dimacs(cnf, comments=["made by a test", "two lines"])
    assert text.splitlines()[:3] == ["c made by a test", "c two lines", "p cnf 4 3"]
    assert parse_dimacs(text) == cnf
    buffer = io.StringIO()
    write_dimacs(cnf, buffer)
    buffer.seek(0)
    assert read_dimacs(buffer) == cnf
    path = tmp_path / "f.cnf"
    write_dimacs(cnf, path)
    assert read_dimacs(path) == cnf
    assert read_dimacs(str(path)) == cnf


@pytest.mark.parametrize("make", [lambda: random_3sat(30, seed=4), lambda: coloring_3(12, seed=5)])
def test_generated_formulas_round_trip(make):
    cnf = make()
    assert parse_dimacs(to_dimacs(cnf)) == cnf


def test_reader_accepts_split_and_joined_clauses_comments_and_satlib_trailer():
    # clause 1 spans two lines, clauses 2 and 3 share a line; SATLIB ends with "%" and a stray "0"
    text = "c comment\np cnf 3 3\n1 -2\n 3 0\nc inside\n-1 0 2 0\n%\n0\n"
    assert parse_dimacs(text) == CNF(num_vars=3, clauses=((1, -2, 3), (-1,), (2,)))


def test_reader_keeps_declared_variable_count():
    # variables 3 and 4 never occur; the header's count is kept
    assert parse_dimacs("p cnf 4 1\n1 -2 0\n").num_vars == 4


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("c only a comment\n", r"line 1: no 'p cnf"),
        ("1 2 0\np cnf 2 1\n", r"line 1: clause data before the 'p cnf"),
        ("p cnf x 1\n1 0\n", r"line 1: malformed header"),
        ("p dnf 2 1\n1 0\n", r"line 1: malformed header"),
        ("p cnf 2 1\np cnf 2 1\n1 0\n", r"line 2: a second 'p' header \(the first is on line 1\)"),
        ("p cnf 2 1\n1 a 0\n", r"line 2: token 'a' is not an integer literal"),
        ("p cnf 3 2\n1 2 0\n-1 4 0\n", r"line 3: literal 4 is out of range for the 3 variables declared on line 1"),
        ("p cnf 3 2\n1 2 0 0\n", r"line 2: empty clause"),
        ("p cnf 3 2\n1 2 0\n\n-1\n3\n", r"line 4: the clause starting here is not terminated by '0'"),
        ("p cnf 3 3\n1 2 0\n-1 0\n", r"line 1: the header declares 3 clauses but the body has 2"),
        ("p cnf 3 1\n1 2 0\n-1 0\n", r"line 1: the header declares 1 clauses but the body has 2"),
    ],
)
def test_malformed_input_names_the_line(text, match):
    with pytest.raises(DimacsError, match=match):
        parse_dimacs(text)


def test_cnf_validation_and_model_check():
    with pytest.raises(ValueError, match=r"clauses\[1\]: literal 5 is out of range for num_vars=3"):
        CNF(num_vars=3, clauses=((1,), (5,)))
    with pytest.raises(ValueError, match="num_vars"):
        CNF(num_vars=-1, clauses=())
    cnf = CNF(num_vars=2, clauses=((1, 2), (-1, 2)))
    assert cnf.is_satisfied_by([-1, 2]) and cnf.is_satisfied_by([1, 2])
    assert not cnf.is_satisfied_by([1, -2])
    assert not cnf.is_satisfied_by([1])  # variable 2 unassigned: clause (-1 ∨ 2) not satisfied
    assert CNF.from_clauses([[1, -3]]).num_vars == 3
