"""iclr26: faithful, runnable implementations of the systems of 19 ICLR 2026 papers.

Each paper lives in ``iclr26.<module>`` (see :mod:`iclr26.catalog`): a drop-in component in the idiom of its field
plus a reproduction run by ``iclr26 run <module> --scale smoke|cpu|gpu``.
"""

__version__ = "0.1.0"
