# Two commands run the hub: `make run` (install, migrate, seed, serve) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP_FLAGS ?= --quiet --disable-pip-version-check

.PHONY: run test install install-test lint imports typecheck migrations-check pytest fuzz soak scale-bench drill-receiver-back bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install $(PIP_FLAGS) -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install $(PIP_FLAGS) -e ".[test]"
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	$(PY) manage.py runhub

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The import contract in pyproject.toml: the layers run one way.
imports: install-test
	$(VENV)/bin/lint-imports

typecheck: install-test
	$(VENV)/bin/mypy .

migrations-check: install-test
	$(PY) manage.py makemigrations --check --dry-run

# Checks against PostgreSQL load the distributed settings, which want an explicit key.
test lint imports typecheck migrations-check pytest fuzz: export SECRET_KEY ?= test-only-secret-key-not-for-any-real-deployment

# The suite runs in PYTEST_WORKERS processes side by side (pytest-xdist), a test file each at a
# time, the slow files first (tests/conftest.py): its tests spend most of their time waiting on
# hub processes, browsers and timers.
# Each process has a test database and a Redis database of its own (tests/parallel.py).
PYTEST_WORKERS ?= 2

pytest: install-test
	$(PY) -m pytest -p tests.parallel -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		$(PYTEST_ARGS)

test: lint imports typecheck migrations-check pytest

# The property-based tests run far longer than in `make test` (50,000 cases each, not 500).
fuzz: install-test
	HYPOTHESIS_PROFILE=deep $(VENV)/bin/pytest -p no:cacheprovider -m "not integration" \
		tests/protocol/test_fuzz_envelopes.py tests/protocol/test_fuzz_rest.py \
		tests/operators_api/test_schema_fuzz.py tests/registry/test_schema_fuzz.py

# Not in `make test`: ten minutes of 1,000 open streams and 50 sends a second against a hub
# of its own, then whether memory and connections stayed flat (bench/soak.py --help;
# e.g. SOAK_ARGS="--minutes 1 --streams 100" for a quick try).
soak: install
	$(PY) bench/soak.py $(SOAK_ARGS)

# Not in `make test`: what reading tasks costs with 1,000, 100,000 and 1,000,000 stored tasks
# of one caller (GetTask, ListTasks, the admin's lists), in a PostgreSQL database of its own
# (bench/scale.py --help; e.g. SCALE_ARGS="--sizes 1000,100000" for a shorter run).
scale-bench: install
	$(PY) bench/scale.py $(SCALE_ARGS)

# Not in `make test`: issue #30's receiver drill on a distributed hub of its own (PostgreSQL and
# Redis from DATABASE_URL and REDIS_URL): a receiver answers 503 for three minutes, then its
# backlog must arrive within 30 s, in order, once (DRILL_OUTAGE_SECONDS=30 for a quick try).
drill-receiver-back: install-test
	SECRET_KEY=$${SECRET_KEY:-test-only-secret-key-not-for-any-real-deployment} \
		$(VENV)/bin/pytest -p no:cacheprovider -s tests/integration/drill_receiver_back.py

clean:
	rm -rf $(VENV) .data .pytest_cache .mypy_cache .ruff_cache
