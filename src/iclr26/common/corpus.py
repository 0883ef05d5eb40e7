"""A byte-level text corpus every machine has offline: the running Python's standard library sources.

By default the corpus is every ``*.py`` file under ``sysconfig.get_paths()["stdlib"]`` (``site-packages``
excluded), sorted by relative path; a user's own text file or folder can replace it (``--set data=PATH``; a folder
contributes every file with a text suffix). Tokens are bytes (vocabulary 256).

Split: by file, deterministic and independent of which other files exist: a file is in validation when the first
byte of ``sha256(relative path)`` is below ``256 · val_fraction``. A single file is split by position instead (its
last ``val_fraction`` of bytes). Files are joined with a newline.

Cache: the tokenised corpus lands in ``<cache>/corpus-<content hash>/{train,val}.u8`` with ``<cache>`` =
``$ICLR26_CACHE`` or ``~/.cache/iclr26``; the key is the SHA-256 of every file's relative path and bytes, so an
edited file gives a fresh entry. A damaged entry (unreadable metadata, truncated arrays) is rebuilt with a warning
naming its path.

User data must be UTF-8 text: a file that does not decode is rejected with its name and the byte offset, so that a
binary file is never trained on by mistake. :func:`check_text_data` runs every check a config needs (existence,
decoding, split sizes) when the config is built, before any work.
"""

from __future__ import annotations

import hashlib
import json
import os
import sysconfig
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from iclr26.common.config import ConfigError, opt

TEXT_SUFFIXES = frozenset({".py", ".txt", ".md", ".rst", ".tex", ".c", ".h", ".json", ".csv", ".html", ".xml"})
VOCAB_SIZE = 256


@dataclass(frozen=True)
class Corpus:
    """A tokenised corpus.

    Attributes:
        train: ``uint8`` token array of the training split.
        val: ``uint8`` token array of the validation split.
        source: the file or folder it came from.
        content_hash: SHA-256 (hex) of the files' relative paths and contents.
        n_files: number of files read.
    """

    train: np.ndarray
    val: np.ndarray
    source: str
    content_hash: str
    n_files: int

    vocab_size: int = VOCAB_SIZE


def stdlib_dir() -> Path:
    """The running interpreter's standard-library folder."""
    return Path(sysconfig.get_paths()["stdlib"])


def cache_dir() -> Path:
    """``$ICLR26_CACHE`` if set, else ``$XDG_CACHE_HOME/iclr26`` or ``~/.cache/iclr26``."""
    if os.environ.get("ICLR26_CACHE"):
        return Path(os.environ["ICLR26_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iclr26"


def _corpus_files(root: Path) -> list[tuple[str, Path]]:
    """(relative path, path) of the corpus files under ``root``, sorted by relative path."""
    if root.is_file():
        return [(root.name, root)]
    if root == stdlib_dir():
        files = [p for p in root.rglob("*.py") if "site-packages" not in p.relative_to(root).parts]
    else:
        files = [p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES]
    return sorted(((p.relative_to(root).as_posix(), p) for p in files), key=lambda item: item[0])


def _is_val(rel: str, val_fraction: float) -> bool:
    return hashlib.sha256(rel.encode()).digest()[0] < 256 * val_fraction


def load_corpus(path: str | Path | None = None, *, val_fraction: float = 0.05, cache: Path | None = None) -> Corpus:
    """Load (and cache) a byte-level corpus.

    Args:
        path: a UTF-8 text file or a folder of them; None for the standard library's ``*.py`` files (read as bytes:
            a few stdlib test files are deliberately in other encodings).
        val_fraction: share of files (or, for one file, of bytes) held out for validation, in (0, 0.5].
        cache: cache folder (default :func:`cache_dir`).

    Returns:
        The :class:`Corpus`.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if ``val_fraction`` is out of range, a user file is not UTF-8 text, or the corpus has no text or
            no file lands in one split.
    """
    if not 0.0 < val_fraction <= 0.5:
        raise ValueError(f"val_fraction must lie in (0, 0.5], got {val_fraction}")
    root = Path(path).expanduser().resolve() if path is not None else stdlib_dir()
    if not root.exists():
        raise FileNotFoundError(f"corpus path {str(root)!r} does not exist; pass a text file or a folder")
    files = _corpus_files(root)
    if not files:
        raise ValueError(f"corpus path {str(root)!r} holds no text files (suffixes: {sorted(TEXT_SUFFIXES)})")

    digest = hashlib.sha256(f"v1 val_fraction={val_fraction}\n".encode())
    contents = []
    for rel, p in files:
        data = p.read_bytes()
        if path is not None:
            _require_utf8(p, data)
        digest.update(rel.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
        contents.append((rel, data))
    content_hash = digest.hexdigest()

    entry = (cache or cache_dir()) / f"corpus-{content_hash[:24]}"
    cached = _read_cache(entry, content_hash)
    if cached is not None:
        train, val = cached
        return Corpus(train, val, str(root), content_hash, len(files))

    if len(contents) == 1:
        data = contents[0][1]
        cut = len(data) - max(1, int(len(data) * val_fraction))
        train_bytes, val_bytes = data[:cut], data[cut:]
    else:
        train_bytes = b"\n".join(d for rel, d in contents if not _is_val(rel, val_fraction))
        val_bytes = b"\n".join(d for rel, d in contents if _is_val(rel, val_fraction))
    if len(train_bytes) < 2 or len(val_bytes) < 2:
        raise ValueError(
            f"corpus {str(root)!r}: the split left {len(train_bytes)} training and {len(val_bytes)} validation bytes; "
            + _split_hint(len(contents), val_fraction)
        )
    train = np.frombuffer(train_bytes, dtype=np.uint8).copy()
    val = np.frombuffer(val_bytes, dtype=np.uint8).copy()
    _write_cache(entry, train, val, content_hash, str(root))
    return Corpus(train, val, str(root), content_hash, len(files))


def _split_hint(n_files: int, val_fraction: float) -> str:
    """What a user can change when a split comes out empty (the config has no field for the fraction)."""
    share = f"{val_fraction:.0%}"
    if n_files == 1:
        return f"a single file is split by position (its last {share} of bytes is validation): pass a longer file"
    return (
        f"a folder is split by file (a hash of each file's path picks about {share} of them for validation): pass "
        "more files, or one longer file"
    )


def data_field(source: str) -> Any:
    """The ``data`` config field of a byte-level LM reproduction (a text file or folder; None = the stdlib sources).

    Args:
        source: why the default corpus stands in for the paper's (e.g. "the paper's Books3 is not available
            offline"), appended to the help text.

    Returns:
        An :func:`~iclr26.common.config.opt` field; check it in ``__post_init__`` with :func:`check_text_data`.
    """
    return opt(
        None,
        "UTF-8 text file, or folder of text files, to train the LM on (bytes are tokens; a single file's last 5% of "
        "bytes is validation, a folder's files are split by a hash of their path; checked when the config is built); "
        f"none = the Python stdlib sources ({source})",
    )


def _require_utf8(path: Path, data: bytes) -> None:
    """Raise a ValueError naming ``path`` and the offset if ``data`` is not UTF-8 text."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"corpus file {str(path)!r} is not UTF-8 text (undecodable byte at offset {err.start}); "
            "pass text files only"
        ) from None


def _read_cache(entry: Path, content_hash: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached (train, val) arrays of ``entry``, or None if there is none; a damaged entry is removed with a
    warning (and then rebuilt by the caller)."""
    meta_path = entry / "meta.json"
    if not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        train = np.fromfile(entry / "train.u8", dtype=np.uint8)
        val = np.fromfile(entry / "val.u8", dtype=np.uint8)
        if meta["content_hash"] == content_hash and len(train) == meta["n_train"] and len(val) == meta["n_val"]:
            return train, val
        problem = "its sizes or hash do not match its metadata"
    except (OSError, ValueError, KeyError, TypeError) as err:
        problem = f"it cannot be read ({type(err).__name__}: {err})"
    warnings.warn(f"corpus cache entry {entry} is damaged: {problem}; rebuilding it", stacklevel=3)
    meta_path.unlink(missing_ok=True)
    return None


def check_text_data(path: str | Path | None, *, field: str, min_tokens: int, val_fraction: float = 0.05) -> None:
    """Check user text data when a config is built: it exists, is UTF-8 text, and each split holds at least
    ``min_tokens`` bytes. The corpus is loaded (and cached) here, so the run's own load is a cache hit.

    Args:
        path: the config's data path; None (the standard library) is always fine.
        field: the config field holding it, named in the error.
        min_tokens: the fewest bytes each of the train and validation splits must hold (e.g. ``context_len + 2``).
        val_fraction: as in :func:`load_corpus`.

    Raises:
        ConfigError: naming ``field``, what is wrong and the fix.
    """
    if path is None:
        return
    try:
        corpus = load_corpus(path, val_fraction=val_fraction)
    except (OSError, ValueError) as err:
        raise ConfigError(f"config field '{field}': {err}") from None
    for split, tokens in (("training", corpus.train), ("validation", corpus.val)):
        if len(tokens) < min_tokens:
            raise ConfigError(
                f"config field '{field}': {path!s} leaves {len(tokens)} bytes in the {split} split, fewer than the "
                f"{min_tokens} this config needs (context_len + 2); pass more text or a shorter context_len"
            )


def _write_cache(entry: Path, train: np.ndarray, val: np.ndarray, content_hash: str, source: str) -> None:
    """Write a cache entry; files are renamed into place so a concurrent reader never sees half of one."""
    try:
        entry.mkdir(parents=True, exist_ok=True)
        for name, arr in (("train.u8", train), ("val.u8", val)):
            tmp = entry / f".{name}.{os.getpid()}.tmp"
            arr.tofile(tmp)
            os.replace(tmp, entry / name)
        meta = {"content_hash": content_hash, "source": source, "n_train": len(train), "n_val": len(val)}
        tmp = entry / f".meta.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(meta))
        os.replace(tmp, entry / "meta.json")
    except OSError as err:
        # The corpus is already in memory and the cache only saves time, so a read-only cache folder is a warning.
        warnings.warn(
            f"could not write the corpus cache {entry}: {err}; set ICLR26_CACHE to a writable folder",
            stacklevel=3,
        )
