"""The byte-level corpus: determinism, the split, the cache keyed by content, user files."""

import numpy as np
import pytest

from iclr26.common.corpus import load_corpus


def write_files(root, n=30):
    root.mkdir()
    for i in range(n):
        (root / f"f{i:02d}.txt").write_text(f"file {i}\n" + "x" * i)


def test_folder_corpus_is_deterministic_and_split_by_file(tmp_path):
    write_files(tmp_path / "data")
    a = load_corpus(tmp_path / "data", cache=tmp_path / "c1", val_fraction=0.2)
    b = load_corpus(tmp_path / "data", cache=tmp_path / "c2", val_fraction=0.2)
    assert np.array_equal(a.train, b.train) and np.array_equal(a.val, b.val) and a.content_hash == b.content_hash
    assert a.n_files == 30 and len(a.train) + len(a.val) == sum(len(f"file {i}\n") + i for i in range(30)) + 28
    val_text = a.val.tobytes().decode()
    train_text = a.train.tobytes().decode()
    for i in range(30):  # every file lands whole in exactly one split
        assert (f"file {i}\n" in val_text) != (f"file {i}\n" in train_text)


def test_cache_is_used_and_keyed_by_content(tmp_path):
    write_files(tmp_path / "data")
    cache = tmp_path / "cache"
    first = load_corpus(tmp_path / "data", cache=cache, val_fraction=0.2)
    entries = list(cache.iterdir())
    assert len(entries) == 1 and (entries[0] / "train.u8").is_file()
    again = load_corpus(tmp_path / "data", cache=cache, val_fraction=0.2)
    assert np.array_equal(first.train, again.train)
    (tmp_path / "data" / "f00.txt").write_text("changed")
    changed = load_corpus(tmp_path / "data", cache=cache, val_fraction=0.2)
    assert changed.content_hash != first.content_hash and len(list(cache.iterdir())) == 2


def test_single_file_is_split_by_position(tmp_path):
    path = tmp_path / "one.txt"
    path.write_bytes(bytes(range(100)))
    c = load_corpus(path, cache=tmp_path / "c", val_fraction=0.1)
    assert c.train.tolist() == list(range(90)) and c.val.tolist() == list(range(90, 100))


def test_stdlib_corpus_is_available_offline(tmp_path):
    c = load_corpus(cache=tmp_path / "c")
    assert c.n_files > 100 and len(c.train) > 1_000_000 and len(c.val) > 10_000
    assert b"def " in c.val[:200_000].tobytes()


def test_bad_inputs(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_corpus(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no text files"):
        load_corpus(tmp_path / "empty")
    with pytest.raises(ValueError, match="val_fraction"):
        load_corpus(tmp_path, val_fraction=0.9)
