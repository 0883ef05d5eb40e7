"""Every config field of every reproduction refuses values no run can honour, before any work, in one line.

Through the runner's own config step (``build_config``), which runs before any folder is made: an integer of 1e19,
a float of nan/inf, and an empty optional value must each raise a ConfigError naming the field (or the ``--set``
key). Modules bound their fields more tightly (``opt(..., le=...)``); this is the floor every field meets.
"""

from __future__ import annotations

import dataclasses
import types
import typing

import pytest

from iclr26.catalog import implemented, load_experiment
from iclr26.common.config import ConfigError
from iclr26.runner import build_config

MODULES = [p.module for p in implemented()] + ["selfcheck"]


def _kinds(tp) -> set[type]:
    """The plain types a field of type ``tp`` holds (``int | None`` -> {int, NoneType})."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType, tuple):
        return set().union(*(_kinds(a) for a in typing.get_args(tp) if a is not Ellipsis))
    return {tp}


@pytest.mark.parametrize("module", MODULES)
def test_every_field_refuses_what_no_run_can_honour(module):
    cls = load_experiment(module).config_cls
    hints = typing.get_type_hints(cls)
    checked = 0
    for f in dataclasses.fields(cls):
        kinds = _kinds(hints[f.name])
        bad = []
        if int in kinds and bool not in kinds:
            bad.append("1e19")
        if float in kinds:
            bad += ["nan", "inf"]
        if type(None) in kinds and typing.get_origin(hints[f.name]) is not tuple:
            bad.append("")
        for text in bad:
            with pytest.raises(ConfigError, match=rf"'{f.name}'|--set {f.name}="):
                build_config(module, "smoke", None, [f"{f.name}={text}"])
            checked += 1
    assert checked > 0
