"""Loaders for BiasFreeBench's official data formats (as stored in xxupiano/BiasFreeBench at ``ac70f51``).

* BBQ: ``BBQ/ambigdata/<Category>.json`` (a JSON list of BBQ's ambiguous items: ``example_id``, ``category``,
  ``context``, ``question``, ``ans0``–``ans2``, ``label`` = the unknown option, ``answer_info``) joined by
  ``example_id`` with ``BBQ/code/labels/<Category>.json`` (the same items plus ``biased_answer`` and
  ``anti_answer``); items without a label entry are dropped, as ``pre_eval_process.py`` drops them.
* FairMT-Bench: ``FairMT-Bench/data/<task>.json``, a JSON list of five-turn dialogues with keys ``"0-turn Conv"`` …
  ``"4-turn Conv"``.
* Training: ``balanced_debias_dpo-8497.json`` (``prompt``, ``chosen`` = anti-stereotype, ``rejected`` =
  stereotype), ``balanced_debias_sft-8497.json`` and ``task_vector_balanced_8497.json`` (LLaMA-Factory's alpaca
  schema ``instruction``, ``input``, ``output``; the prompt is ``instruction`` plus ``"\\n" + input`` when ``input``
  is not empty, as LLaMA-Factory's alpaca converter joins them). An optional ``bias_type`` key (not in the official
  files) names the category, which the gender-only DPO arm needs.

The files as published carry a few quirks the loaders absorb: answer options with a trailing space (``"The friend "``
in 62 Disability_status and Nationality items, whose label files name ``"The friend"``), so every answer field is
whitespace-normalised (:func:`normalise`); and a DPO pair whose ``chosen`` and ``rejected`` are the same text (one of
the 8,497), which is skipped with a warning and counted (:func:`read_dpo`). Everything else malformed raises
:class:`ValueError` naming the file and the item.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iclr26.biasfree.items import BBQItem, PreferencePair

__all__ = [
    "DPOData",
    "find_bbq",
    "load_bbq",
    "load_bbq_category",
    "load_dpo",
    "load_fairmt",
    "load_sft",
    "normalise",
    "read_dpo",
]

FAIRMT_TURNS = tuple(f"{t}-turn Conv" for t in range(5))


def normalise(text: str) -> str:
    """``text`` with surrounding whitespace removed and inner runs of whitespace made one space."""
    return " ".join(text.split())


def _read_list(path: Path) -> list[Any]:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path}: expected a non-empty JSON list of items, got {type(data).__name__}")
    return data


def _need(path: Path, i: int, item: Any, keys: tuple[str, ...], kind: type = str) -> None:
    if not isinstance(item, dict):
        raise ValueError(f"{path}: item {i} is not a JSON object")
    for key in keys:
        if key not in item:
            raise ValueError(f"{path}: item {i} has no key {key!r}")
        if not isinstance(item[key], kind) or (kind is str and not item[key].strip() and key != "input"):
            raise ValueError(f"{path}: item {i}: {key!r} must be a non-empty {kind.__name__}, got {item[key]!r}")


def load_bbq_category(ambig_file: str | Path, labels_file: str | Path) -> list[BBQItem]:
    """One category's ambiguous items with their biased/anti labels.

    Raises:
        ValueError: naming the file and item for a missing key, a ``label`` outside 0..2, a non-ambiguous item, or
            a biased/anti answer that is not one of the two named options.
    """
    ambig_file, labels_file = Path(ambig_file), Path(labels_file)
    items, labels = _read_list(ambig_file), _read_list(labels_file)
    by_id = {}
    for i, lab in enumerate(labels):
        _need(labels_file, i, lab, ("biased_answer", "anti_answer"))
        if "example_id" not in lab:
            raise ValueError(f"{labels_file}: item {i} has no key 'example_id'")
        by_id[lab["example_id"]] = lab
    out = []
    for i, it in enumerate(items):
        _need(ambig_file, i, it, ("context", "question", "ans0", "ans1", "ans2"))
        if "example_id" not in it or "label" not in it:
            raise ValueError(f"{ambig_file}: item {i} needs 'example_id' and 'label'")
        if it.get("context_condition", "ambig") != "ambig":
            raise ValueError(f"{ambig_file}: item {i} is not ambiguous (context_condition "
                             f"{it['context_condition']!r}); BiasFreeBench uses only ambiguous items")  # fmt: skip
        if it["label"] not in (0, 1, 2):
            raise ValueError(f"{ambig_file}: item {i}: 'label' must be 0, 1 or 2, got {it['label']!r}")
        info = it.get("answer_info", {}).get(f"ans{it['label']}")
        if info is not None and info[1] != "unknown":
            raise ValueError(f"{ambig_file}: item {i}: the labelled answer ans{it['label']} is not the unknown "
                             f"option (answer_info {info})")  # fmt: skip
        lab = by_id.get(it["example_id"])
        if lab is None:
            continue
        try:
            out.append(BBQItem(
                example_id=int(it["example_id"]), category=str(it.get("category", ambig_file.stem)),
                context=it["context"], question=it["question"],
                answers=(normalise(it["ans0"]), normalise(it["ans1"]), normalise(it["ans2"])),
                unknown_index=int(it["label"]), biased_answer=normalise(lab["biased_answer"]),
                anti_answer=normalise(lab["anti_answer"]), polarity=str(it.get("question_polarity", "neg")),
            ))  # fmt: skip
        except ValueError as err:
            raise ValueError(f"{ambig_file}: item {i}: {err}") from None
    if not out:
        raise ValueError(f"{ambig_file}: no item has a label entry in {labels_file}")
    return out


def find_bbq(path: str | Path) -> tuple[Path, Path]:
    """The ``ambigdata`` and ``labels`` folders under ``path`` (the repository root, its ``BBQ`` folder, or a folder
    holding ``ambigdata/`` and ``labels/``).

    Raises:
        ValueError: if neither layout is there.
    """
    root = Path(path)
    for base in (root / "BBQ", root):
        ambig = base / "ambigdata"
        for labels in (base / "code" / "labels", base / "labels"):
            if ambig.is_dir() and labels.is_dir():
                return ambig, labels
    raise ValueError(f"{root}: expected BBQ's ambigdata/ and code/labels/ (or labels/) folders, as in "
                     "xxupiano/BiasFreeBench's BBQ folder")  # fmt: skip


def load_bbq(path: str | Path) -> list[BBQItem]:
    """All categories of an official BBQ folder (:func:`find_bbq`), in file-name order.

    Raises:
        ValueError: if a category file has no label file, or as :func:`load_bbq_category`.
    """
    ambig, labels = find_bbq(path)
    files = sorted(ambig.glob("*.json"))
    if not files:
        raise ValueError(f"{ambig}: no <Category>.json files")
    out = []
    for f in files:
        if not (labels / f.name).is_file():
            raise ValueError(f"{f}: no label file {labels / f.name}")
        out.extend(load_bbq_category(f, labels / f.name))
    return out


def load_fairmt(path: str | Path) -> list[tuple[str, ...]]:
    """FairMT-Bench dialogues: per item the five user turns ``"0-turn Conv"`` … ``"4-turn Conv"`` in order.

    Raises:
        ValueError: naming the item for a missing or empty turn.
    """
    path = Path(path)
    out = []
    for i, item in enumerate(_read_list(path)):
        _need(path, i, item, FAIRMT_TURNS)
        out.append(tuple(item[k] for k in FAIRMT_TURNS))
    return out


@dataclass(frozen=True)
class DPOData:
    """A DPO training file as read.

    Attributes:
        pairs: the usable pairs, in file order.
        n_items: items in the file.
        skipped: indices of the items skipped because ``chosen`` and ``rejected`` are the same text.
    """

    pairs: list[PreferencePair]
    n_items: int
    skipped: tuple[int, ...]


def read_dpo(path: str | Path) -> DPOData:
    """``balanced_debias_dpo-8497.json``: ``prompt``, ``chosen`` (anti-stereotype), ``rejected`` (stereotype).

    A pair whose ``chosen`` and ``rejected`` are the same text after :func:`normalise` teaches DPO nothing (its
    margin is 0 whatever the model): it is skipped with a warning and counted in ``skipped``.

    Raises:
        ValueError: naming the item for a missing or empty field, or if no usable pair is left.
    """
    path = Path(path)
    out, skipped = [], []
    items = _read_list(path)
    for i, item in enumerate(items):
        _need(path, i, item, ("prompt", "chosen", "rejected"))
        if normalise(item["chosen"]) == normalise(item["rejected"]):
            skipped.append(i)
            continue
        out.append(PreferencePair(item["prompt"], item["chosen"], item["rejected"], item.get("bias_type")))
    if skipped:
        warnings.warn(f"{path}: skipped {len(skipped)} of {len(items)} pairs whose 'chosen' and 'rejected' are the "
                      f"same text (items {skipped[:5]}{' ...' if len(skipped) > 5 else ''})", stacklevel=2)  # fmt: skip
    if not out:
        raise ValueError(f"{path}: every pair has the same 'chosen' and 'rejected' text; nothing to train on")
    return DPOData(out, len(items), tuple(skipped))


def load_dpo(path: str | Path) -> list[PreferencePair]:
    """The usable pairs of a DPO training file (:func:`read_dpo`, which says what is skipped).

    Raises:
        ValueError: as :func:`read_dpo`.
    """
    return read_dpo(path).pairs


def load_sft(path: str | Path) -> list[tuple[str, str]]:
    """An alpaca-schema file (``balanced_debias_sft-8497.json``, ``task_vector_balanced_8497.json``):
    ``(prompt, output)`` pairs.

    Raises:
        ValueError: naming the item for a missing or empty ``instruction``/``output`` or a non-string ``input``.
    """
    path = Path(path)
    out = []
    for i, item in enumerate(_read_list(path)):
        _need(path, i, item, ("instruction", "output"))
        extra = item.get("input", "")
        if not isinstance(extra, str):
            raise ValueError(f"{path}: item {i}: 'input' must be a string, got {extra!r}")
        out.append((item["instruction"] + (f"\n{extra}" if extra.strip() else ""), item["output"]))
    return out
