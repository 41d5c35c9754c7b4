# Developer entry points. Every target creates .venv and installs the project on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test rehearse lint typecheck bench clean

# The host kit (clients/python) is its own distribution: pip cannot take a relative path
# as a dependency of pyproject.toml, so it is installed beside the server, editable.
$(STAMP): pyproject.toml clients/python/pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e clients/python -e '.[dev,infra]'
	touch $(STAMP)

## Start the embedded local service (moto + MCP endpoint on 127.0.0.1:8787). No AWS account needed.
serve: $(STAMP)
	$(BIN)/engram-memory serve $(ARGS)

## Run every test tier (unit, integration on moto, e2e over HTTP, CDK synthesis + cdk-nag,
## the deployment rehearsal, the review page in headless Chromium; the host kit's tests).
# The e2e, rehearsal and browser tiers run in their own processes: their moto server runs
# inside the test process, and moto's backends are process-global, so in-process mock_aws
# tests must not share it; the rehearsal's functions also switch the process environment.
# The browser tier needs Debian's chromium (.ci/run installs it).
test: $(STAMP)
# The main tier runs one worker per core (pytest-xdist), a whole test file per worker
# (module-scoped moto servers stay in one process): half the time on the 2-core CI machine.
	$(BIN)/python -m pytest -n auto --dist loadfile --ignore=tests/e2e --ignore=tests/rehearsal --ignore=tests/browser $(ARGS)
	$(BIN)/python -m pytest tests/e2e $(ARGS)
	$(BIN)/python -m pytest tests/rehearsal $(ARGS)
	$(BIN)/python -m pytest tests/browser $(ARGS)

## Rehearse a deployment: synthesize the tenant stack, stand it up in moto from the template,
## run every function under its own role with IAM enforced (docs/deploy.md, "Rehearsal").
rehearse: $(STAMP)
	$(BIN)/python -m pytest tests/rehearsal $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check shared functions infra tests bench examples tools clients/python

typecheck: $(STAMP)
	$(BIN)/mypy && $(BIN)/mypy functions && $(BIN)/mypy infra && $(BIN)/mypy bench

bench: $(STAMP)
	$(BIN)/python bench/tool_latency.py
	$(BIN)/python bench/ranking_quality.py
	$(BIN)/python bench/throughput.py
	$(BIN)/python bench/search_scale.py

clean:
	rm -rf $(VENV) cdk.out .pytest_cache .mypy_cache .ruff_cache
