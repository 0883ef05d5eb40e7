"""DIMACS reader/writer: round trips, the formats real files use, and line-numbered errors."""

from __future__ import annotations

import gzip
import io
import time

import numpy as np
import pytest

from iclr26.rlaf import cnf as cnf_module
from iclr26.rlaf.cnf import CNF, DimacsError, memory_estimate, parse_dimacs, read_dimacs, to_dimacs, write_dimacs
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
    with pytest.raises(ValueError, match=r"clauses\[1\]\[0\]: literal 5 is out of range for num_vars=3"):
        CNF(num_vars=3, clauses=((1,), (5,)))
    with pytest.raises(ValueError, match="num_vars"):
        CNF(num_vars=-1, clauses=())
    cnf = CNF(num_vars=2, clauses=((1, 2), (-1, 2)))
    assert cnf.is_satisfied_by([-1, 2]) and cnf.is_satisfied_by([1, 2])
    assert not cnf.is_satisfied_by([1, -2])
    assert not cnf.is_satisfied_by([1])  # variable 2 unassigned: clause (-1 ∨ 2) not satisfied
    assert CNF.from_clauses([[1, -3]]).num_vars == 3


def test_gzipped_files_are_read_whatever_their_name(tmp_path):
    cnf = CNF(num_vars=3, clauses=((1, -2), (3,)))
    for name in ("f.cnf.gz", "g.cnf"):  # the gzip magic bytes decide, not the suffix
        (tmp_path / name).write_bytes(gzip.compress(to_dimacs(cnf).encode()))
        assert read_dimacs(tmp_path / name) == cnf


def test_a_folder_is_rejected_with_a_pointer_to_the_folder_reader(tmp_path):
    with pytest.raises(IsADirectoryError, match=r"is a folder, not a DIMACS file; .* use read_dimacs_folder"):
        read_dimacs(tmp_path)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        read_dimacs(str(tmp_path))


@pytest.mark.parametrize(
    ("content", "match"),
    [
        # 0xff can never start a UTF-8 sequence; "p cnf 1 1\n" is bytes 0-9, so it sits at offset 10
        (b"p cnf 1 1\n\xff 0\n", r"line 2: byte 0xff at offset 10 is not DIMACS text"),
        (b"\x00\x01\x02\x03", r"line 1: byte 0x00 at offset 0 is not DIMACS text"),
        # a NUL byte is binary even in a comment ("c ab" is bytes 0-3)
        (b"c ab\x00\np cnf 1 1\n1 0\n", r"line 1: byte 0x00 at offset 4 .* a binary or compressed file"),
        # outside a comment a Latin-1 byte is still not DIMACS text: lines of 7 and 10 bytes, then "1 " -> 19
        (b"c caf\xe9\np cnf 1 1\n1 \xe9 0\n", r"line 3: byte 0xe9 at offset 19"),
    ],
)
def test_a_binary_file_is_rejected_with_line_and_offset(tmp_path, content, match):
    path = tmp_path / "x.cnf"
    path.write_bytes(content)
    with pytest.raises(DimacsError, match=match):
        read_dimacs(path)


@pytest.mark.parametrize("compress", [False, True])
def test_comments_may_hold_any_byte_but_nul(tmp_path, compress):
    # a Latin-1 author name in a comment (0xe9 = e-acute) and free text after SATLIB's '%' marker
    content = b"c generated by Ren\xe9\np cnf 2 1\n1 -2 0\n%\n\xff trailer\n"
    path = tmp_path / ("x.cnf.gz" if compress else "x.cnf")
    path.write_bytes(gzip.compress(content) if compress else content)
    assert read_dimacs(path) == CNF(num_vars=2, clauses=((1, -2),))


@pytest.mark.parametrize(
    ("clauses", "error", "match"),
    [
        (((1, 2.0),), TypeError, r"clauses\[0\]\[1\]: literal 2.0 is a float, not an integer"),
        (((1,), ("2",)), TypeError, r"clauses\[1\]\[0\]: literal '2' is a str, not an integer"),
        (((True, 2),), TypeError, r"clauses\[0\]\[0\]: literal True is a bool, not an integer"),
        (((1, 0, 2),), ValueError, r"clauses\[0\]\[1\]: literal 0 is out of range .* 0 only ends a clause"),
        (((1,), (2, -5)), ValueError, r"clauses\[1\]\[1\]: literal -5 is out of range for num_vars=3"),
        (((1,), 2), TypeError, r"clauses\[1\] must be a sequence of integer literals, got 2 \(int\)"),
        (((1,), "12"), TypeError, r"clauses\[1\] must be a sequence of integer literals, got '12'"),
    ],
)
def test_cnf_rejects_what_is_not_an_integer_literal_naming_it(clauses, error, match):
    with pytest.raises(error, match=match):
        CNF(num_vars=3, clauses=clauses)


def test_cnf_accepts_numpy_integer_literals_and_rejects_a_bool_or_float_variable_count():
    assert CNF(num_vars=np.int64(2), clauses=((np.int64(1), np.int32(-2)),)).num_clauses == 1
    with pytest.raises(TypeError, match=r"num_vars must be an integer, got True \(bool\)"):
        CNF(num_vars=True, clauses=())
    with pytest.raises(TypeError, match=r"num_vars must be an integer, got 3.0 \(float\)"):
        CNF(num_vars=3.0, clauses=())


def test_memory_estimate_matches_the_hand_count():
    # 10 variables: 2 watch lists of 56 + 8 bytes, 8 slots of 8 bytes, a heap entry of 56 + 24 + 8 bytes = 280 each;
    # 30 literal occurrences of 8 + 32 bytes = 40 each: 2800 + 1200
    assert memory_estimate(10, 30) == 4000
    assert memory_estimate(0) == 0


def test_a_header_far_beyond_memory_is_refused_at_once_with_the_estimate():
    # 10^10 variables x 280 bytes = 2.8e12 bytes = 2607.7 GiB, more than any machine this runs on
    start = time.perf_counter()
    with pytest.raises(DimacsError, match=r"line 2: header 'p cnf 10000000000 1': .* need at least 2607\.7 GiB"):
        parse_dimacs("c huge\np cnf 10000000000 1\n1 0\n")
    with pytest.raises(ValueError, match=r"num_vars: 10000000000 variables need at least 2607\.7 GiB to solve"):
        CNF(num_vars=10**10, clauses=((1,),))
    assert time.perf_counter() - start < 1.0


def test_the_memory_check_uses_this_machines_memory(monkeypatch):
    # with 1 MiB (1 048 576 bytes) of physical memory: 3744 variables need 1 048 320 bytes and pass, 3745 need
    # 1 048 600 and are refused; 4000 need 1 120 000 bytes = 1.07 MiB
    monkeypatch.setattr(cnf_module, "_physical_memory", lambda: 2**20)
    assert CNF(num_vars=3744, clauses=()).num_vars == 3744
    with pytest.raises(ValueError, match="3745 variables"):
        CNF(num_vars=3745, clauses=())
    with pytest.raises(DimacsError, match=r"4000 variables need at least 1\.1 MiB .* this machine's 1\.0 MiB"):
        parse_dimacs("p cnf 4000 1\n1 0\n")
