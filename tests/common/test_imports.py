"""Start-up: a process pays only for the heavy packages it uses.

``iclr26 list``/``report`` and ``--help`` need none of torch, matplotlib, scipy or a paper's optional dependency;
the shared modules import them where they are used (a plot, a t-test, a run). Checked in a fresh interpreter, since
this test process has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "matplotlib", "scipy", "transformers", "pyspiel", "networkx", "z3")

PROBE = """
import json, sys
from iclr26 import cli, catalog, report, runner
from iclr26.common import distributed, experiment, plots, records, seeding, stats, verdict
catalog.implemented()
cli._parser().parse_args(["list"])
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def test_cli_catalog_and_common_modules_import_no_heavy_package():
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_a_plot_and_a_t_test_import_what_they_use():
    probe = (
        "import json, sys\n"
        "from iclr26.common.plots import figure\n"
        "from iclr26.common.stats import paired_t\n"
        "paired_t([1.0, 2.0, 4.0])\n"
        "before = 'matplotlib' in sys.modules\n"
        "figure()\n"
        "print(json.dumps([before, 'scipy.special' in sys.modules, 'scipy.stats' in sys.modules,"
        " 'matplotlib.pyplot' in sys.modules]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    # no matplotlib until the first figure; the t-test loads scipy.special, not scipy.stats
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [False, True, False, True]
