"""Build of the compiled parts of the package (metadata lives in pyproject.toml).

``iclr26.rlaf._cdcl``: RLAF's CDCL search in C (see ``src/iclr26/rlaf/cdcl.py`` for the algorithm and the pure-Python
reference it must match step for step). ``iclr26.lamir._cfr``: LAMIR's CFR+ loop in C (see
``src/iclr26/lamir/subgame.py``; bit for bit the numpy loop, hence no fused multiply-adds). ``make install``
(``pip install -e .``) compiles them with the machine's C compiler and the Python headers.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("iclr26.rlaf._cdcl", ["src/iclr26/rlaf/_cdcl.c"], extra_compile_args=["-O2"]),
        Extension("iclr26.lamir._cfr", ["src/iclr26/lamir/_cfr.c"], extra_compile_args=["-O2", "-ffp-contract=off"]),
    ]
)
