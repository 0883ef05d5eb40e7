"""Loading the package's compiled cores (C extensions built by ``make install``: ``iclr26.rlaf._cdcl``,
``iclr26.lamir._cfr``), with an error that says how to build them and which pure-Python reference runs instead."""

from __future__ import annotations

import importlib
from types import ModuleType


def compiled_core(name: str, *, what: str, fallback: str) -> ModuleType:
    """The extension module ``name``.

    Args:
        name: its dotted module name.
        what: what it is, for the error (e.g. ``"CDCL core"``).
        fallback: how to run the pure-Python reference instead, for the error.

    Raises:
        ImportError: if it was not built, with the command that builds it and ``fallback``.
    """
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise ImportError(
            f"the compiled {what} {name} is not built: run `make install` (or `pip install -e .` in the repository, "
            f"which needs a C compiler and the Python headers); {fallback} ({err})"
        ) from None
