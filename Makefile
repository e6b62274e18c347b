# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test check bench clean lock

# constraints.txt pins the tested set, so a new machine does not pick up whatever is newest.
$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

# Sluice's modules as bytecode, as an installed copy has them: where the shell sets
# PYTHONDONTWRITEBYTECODE, every command would otherwise compile them again (about 0.1 s each).
# Only changed modules are compiled, so this is quick when nothing changed.
BYTECODE = $(PY) -m compileall -q app core ui bench >/dev/null

run: $(STAMP)
	@$(BYTECODE)
	$(PY) -m app

# On two processes (tests/conftest.py says how they share the machine's server), then the tests
# that measure time, alone (exit code 5: PYTEST_ARGS chose none of them).
TEST_PROCESSES ?= 2
test: $(STAMP)
	@$(BYTECODE)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -n $(TEST_PROCESSES) --dist loadgroup -m "not alone" $(PYTEST_ARGS)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -m alone $(PYTEST_ARGS) || test $$? -eq 5

check: $(STAMP)
	$(VENV)/bin/ruff check app core ui tests bench
	$(VENV)/bin/mypy app core ui bench
	$(VENV)/bin/lint-imports

# The corpus of file shapes (bench/corpus.py) beside psql \copy and the server's own limit; writes bench/RESULTS.md.
bench: $(STAMP)
	@$(BYTECODE)
	$(PY) -m bench.corpus_bench --big --out bench/RESULTS.md $(BENCH_ARGS)

# After upgrading on purpose (pip install -U ... in .venv) and a passing `make test`: record the new set.
lock:
	{ grep '^#' constraints.txt; $(PY) -m pip freeze --exclude-editable | grep -vi '^sluice=='; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

clean:
	rm -rf $(VENV) build *.egg-info
