"""Build of the one compiled part of the package (metadata lives in pyproject.toml).

``iclr26.rlaf._cdcl``: RLAF's CDCL search in C (see ``src/iclr26/rlaf/cdcl.py`` for the algorithm and the pure-Python
reference it must match step for step). ``make install`` (``pip install -e .``) compiles it with the machine's C
compiler and the Python headers.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("iclr26.rlaf._cdcl", ["src/iclr26/rlaf/_cdcl.c"], extra_compile_args=["-O2"])])
