"""Every int and float field of the config has an upper bound that refuses a value no run can honour, at once."""

from __future__ import annotations

import dataclasses
import time
import typing

import pytest

from iclr26.common.config import ConfigError, field_range
from iclr26.kern.config import KernConfig as Config

HINTS = typing.get_type_hints(Config)
NUMERIC = [
    f.name
    for f in dataclasses.fields(Config)
    if any(t in (int, float) for t in (HINTS[f.name], *typing.get_args(HINTS[f.name])))
    or any(t in (int, float) for a in typing.get_args(HINTS[f.name]) for t in typing.get_args(a))
]


@pytest.mark.parametrize("name", [n for n in NUMERIC if n != "seed"])
def test_every_numeric_field_declares_an_upper_bound(name):
    bounds = field_range(next(f for f in dataclasses.fields(Config) if f.name == name))
    assert bounds is not None and bounds.bounded_above, f"{name} has no upper bound of its own"


@pytest.mark.parametrize("name", NUMERIC)
def test_a_huge_value_is_refused_before_any_work(name):
    base = Config.preset("smoke")
    value = getattr(base, name)
    element = value[0] if isinstance(value, tuple) else value
    huge = 10**20 if isinstance(element, int) and not isinstance(element, bool) else 1e300
    start = time.process_time()
    with pytest.raises(ConfigError, match=f"'{name}'"):
        dataclasses.replace(base, **{name: (huge,) * len(value) if isinstance(value, tuple) else huge})
    assert time.process_time() - start < 1.0
