"""The shape every paper folder shares (CONTRIBUTING.md, "A paper's folder"), checked for all of them.

- fixed file roles: ``config.py`` (the config dataclass and its presets), ``verdict.py`` (a public, pure
  ``verdict(measurements, ...)``), ``experiment.py`` (the units of work), component files named for what they hold;
- no function over 80 lines in ``experiment.py`` or ``verdict.py``;
- no paper imports another paper, ``common/`` imports no paper, and the drop-in components never import the
  harness (``experiment.py``, ``verdict.py``);
- tests use public names only;
- the module README follows the one template, runs its usage block in a test, and stays short;
- nowhere in the project a word on how the work was done (issue numbers, work periods): history belongs in git.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from iclr26.catalog import PAPERS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "iclr26"
MODULES = [p.module for p in PAPERS]
#: File names that say less than the role they hold; the component file is named for what it holds.
VAGUE_NAMES = {"models.py", "network.py", "networks.py", "utils.py", "helpers.py", "misc.py"}
HARNESS = {"experiment", "verdict", "config"}
#: The README template's headings, in order (CONTRIBUTING.md).
README_HEADINGS = [
    "## The paper and the claim",
    "## The component",
    "### Using it",
    "### Symbols",
    "## The reproduction",
    "### The verdict",
    "### Results",
    "## Deviations",
    "## Facts checked",
]
#: Lines of a module README outside its generated results block.
MAX_README_LINES = 260
MAX_FUNCTION_LINES = 80


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize("module", MODULES)
def test_file_roles(module):
    folder = SRC / module
    for role in ("config.py", "verdict.py", "experiment.py", "README.md", "__init__.py"):
        assert (folder / role).is_file(), f"{module}: no {role}"
    vague = sorted(p.name for p in folder.glob("*.py") if p.name in VAGUE_NAMES)
    assert not vague, f"{module}: name the file for what it holds, not {vague}"
    tree = ast.parse((folder / "verdict.py").read_text(encoding="utf-8"))
    public = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    assert "verdict" in public, f"{module}/verdict.py has no public verdict(...)"
    experiment = (folder / "experiment.py").read_text(encoding="utf-8")
    assert "class " not in experiment or not re.search(r"class \w+Config\(ExperimentConfig\)", experiment), (
        f"{module}: the config dataclass belongs in config.py"
    )


@pytest.mark.parametrize("module", MODULES)
def test_no_long_functions_in_the_harness(module):
    for name in ("experiment.py", "verdict.py"):
        path = SRC / module / name
        for fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            length = fn.end_lineno - fn.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{module}/{name}: {fn.name} is {length} lines (at most 80)"


@pytest.mark.parametrize("module", MODULES)
def test_imports_respect_the_folders(module):
    others = {f"iclr26.{m}" for m in MODULES if m != module}
    for path in (SRC / module).glob("*.py"):
        for name in _imports(path):
            assert not any(name == o or name.startswith(o + ".") for o in others), f"{path}: imports {name}"
            if path.stem not in HARNESS:  # a drop-in component never imports the harness
                assert not any(name == f"iclr26.{module}.{h}" for h in ("experiment", "verdict")), (
                    f"{path}: a component imports the harness ({name})"
                )


def test_common_imports_no_paper():
    papers = {f"iclr26.{m}" for m in MODULES}
    for path in (SRC / "common").glob("*.py"):
        for name in _imports(path):
            assert not any(name == p or name.startswith(p + ".") for p in papers), f"{path}: imports {name}"


def test_tests_use_public_names():
    private = []
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("iclr26"):
                private += [f"{path.relative_to(ROOT)}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert not private, "tests import private names:\n" + "\n".join(private)


@pytest.mark.parametrize("module", MODULES)
def test_readme_follows_the_template(module):
    text = (SRC / module / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    prose = re.sub(r"<!-- results:begin -->.*?<!-- results:end -->", "", text, flags=re.DOTALL).splitlines()
    assert len(prose) <= MAX_README_LINES, f"{module}/README.md has {len(prose)} lines of prose (at most 260)"
    positions = []
    for heading in README_HEADINGS:
        found = [i for i, line in enumerate(lines) if line.strip() == heading or line.startswith(heading + " ")]
        assert found, f"{module}/README.md lacks the heading {heading!r}"
        positions.append(found[0])
    assert positions == sorted(positions), f"{module}/README.md: the template's headings are out of order"
    using = text[text.index("### Using it") :]
    assert "```python" in using.split("\n## ")[0], f"{module}/README.md: no python block under '### Using it'"


#: Words about how the work was done; the project speaks of the project alone.
HISTORY = re.compile(
    r"\bissues? #?\d+|\bsession \d|\bwork period|\bthe lead\b|\bsubagent|\bfind_repos\b|\bsearch tool",
    re.IGNORECASE,
)


def test_no_words_about_how_the_work_was_done():
    found = []
    paths = [*SRC.rglob("*.py"), *SRC.rglob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    paths += [path for folder in ("benchmarks", "tests", "tools") for path in (ROOT / folder).rglob("*.py")]
    paths.remove(Path(__file__))  # this file names the words it looks for
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not found, "history belongs in git:\n" + "\n".join(found[:30])


def test_every_data_parallel_module_says_how_it_runs_under_torchrun():
    from iclr26.runner import data_parallel_modules

    top = (ROOT / "README.md").read_text(encoding="utf-8")
    supported = top.split("**Supported:**", 1)[1].split("\n\n", 1)[0]
    for module in data_parallel_modules():
        assert module in supported, f"the top README's torchrun list lacks {module}"
        text = (SRC / module / "README.md").read_text(encoding="utf-8")
        section = text.split("### More than one process", 1)[-1].split("\n## ", 1)[0]
        assert "torchrun" in section, f"{module}/README.md: 'More than one process' does not say how to launch it"


#: A record folder as the READMEs and ``runs/report.md`` name it: ``runs/<module>/<stamp>`` (the report's links are
#: relative to ``runs/``, so there it follows a parenthesis).
RECORD_LINK = re.compile(r"(?:runs/|\()([a-z0-9]+/\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+Z)")


def _committed(folder: str) -> set[str] | None:
    """Paths under ``folder`` that git tracks, or None outside a git checkout (then the files on disk count)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", folder], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.decode().split("\0")) - {""}


def test_every_record_the_docs_name_is_committed():
    """``runs/`` is ignored by git, so a record enters the project only through ``git add -f``; a README or the
    report that names a record nobody added points a fresh clone at nothing."""
    docs = [ROOT / "README.md", ROOT / "runs" / "report.md", *(SRC / m / "README.md" for m in MODULES)]
    named = {f"runs/{m.group(1)}/result.json" for doc in docs for m in RECORD_LINK.finditer(doc.read_text("utf-8"))}
    assert len(named) >= len(MODULES)  # every paper's README names its latest cpu record
    tracked = _committed("runs")
    missing = sorted(p for p in named if (p not in tracked if tracked is not None else not (ROOT / p).exists()))
    assert not missing, "named in a README or runs/report.md but not committed (git add -f):\n" + "\n".join(missing)
