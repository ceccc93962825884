# Palimpsest — `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
LOCAL_PKGS := libs/core libs/index libs/devtools services/ingest services/recency-scanner services/chunker \
              services/embedder services/analyzer services/reviewer .
STAMP := $(VENV)/.installed
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: help setup browser lock lint typecheck check test test-external demo bench chart chaos clean settings-doc owners-doc \
        wheelhouse images images-test image-tools-lock

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(STAMP): requirements.lock pyproject.toml $(wildcard libs/*/pyproject.toml services/*/pyproject.toml) \
          libs/index/hatch_build.py libs/index/src/palimpsest/index/_lexical.c
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r requirements.lock
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation $(addprefix -e ,$(LOCAL_PKGS))
	@touch $(STAMP)

setup: $(STAMP) browser ## create .venv and install everything from the hash-pinned lock

# The web view's browser test drives Debian's chromium through chromium-driver (no browser download);
# installed with apt-get when missing and root, else the test skips and says why.
browser: ## install chromium and chromium-driver (Debian packages) when missing, as root
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" != 0 ]; then \
	  echo "chromium/chromium-driver missing and not root: the browser test will skip (apt-get install chromium chromium-driver)"; \
	else echo "installing chromium chromium-driver with apt-get"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      chromium chromium-driver >/dev/null; } || echo "apt-get could not install chromium chromium-driver: the browser test will skip"; \
	fi

# The current lock is the resolver's preference (uv keeps a pinned version that still fits), so adding
# one package moves no other pin; UPGRADE=1 re-resolves everything to the newest allowed.
lock: ## resolve requirements.in into requirements.lock, keeping today's pins (UPGRADE=1: all newest)
	@tmp=$$(mktemp --suffix=.lock) && trap 'rm -f "$$tmp"' EXIT && cp requirements.lock "$$tmp" && \
	$(BIN)/uv pip compile requirements.in --generate-hashes --python-version 3.11 --no-header \
	  --no-annotate $(if $(UPGRADE),--upgrade,) -o "$$tmp" >/dev/null && \
	grep -v '^-e ' "$$tmp" > requirements.lock

lint: $(STAMP) ## ruff
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP) ## mypy --strict on all source
	$(BIN)/mypy libs/*/src services/*/src

check: lint typecheck ## lint and type checks

# -n auto: tests/conftest.py's pytest_xdist_auto_num_workers says how many processes (one per core,
# each with its own embedded PostgreSQL and NATS; one process on external servers); a file's tests
# stay in one process. TEST_WORKERS=0 runs everything in this one.
TEST_WORKERS ?= auto
test: $(STAMP) ## run the whole test suite (embedded PostgreSQL + NATS unless PALIMPSEST_TEST_*_URL are set)
	$(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

demo: $(STAMP) ## the main job on the embedded stack: index and analyse this repository (or REPO=path)
	$(BIN)/palimpsest demo $(if $(REPO),--repo $(REPO),)

settings-doc: $(STAMP) ## regenerate docs/settings.md and the names file every process checks, from the Settings classes
	$(BIN)/python -m palimpsest.cli.settings_registry docs/settings.md

owners-doc: $(STAMP) ## regenerate the "owns (writes)" column of docs/architecture.md from the stores' declarations
	$(BIN)/python -m palimpsest.devtools.owners docs/architecture.md

CHAOS_ARGS ?= --repos 20 --deliveries 2000
chaos: $(STAMP) ## soak with faults (kill -9, NATS/PostgreSQL restarts, relay pause); exits 1 on any discrepancy
	$(BIN)/palimpsest chaos $(CHAOS_ARGS) --json

chart: $(STAMP) ## lint, render and validate the Helm chart offline (Helm's engine via helm-python-sdk)
	$(BIN)/pytest -q -p no:cacheprovider tests/deploy

# Images: built offline from a wheelhouse; the wheelhouse, the Debian base images and the audit tools
# are cached outside the clone, so a second run downloads and bootstraps nothing.
IMAGE_CACHE ?= /var/cache/palimpsest-images
WHEELHOUSE ?= $(IMAGE_CACHE)/wheelhouse
IMAGES_OUT ?= dist/images
IMAGE_SERVICES ?= ingest,recency-scanner,chunker,embedder,analyzer,reviewer
IMAGE_ENGINE ?= auto

wheelhouse: $(STAMP) ## download every wheel the images need (hash-checked, deploy/requirements/*.txt) into $(WHEELHOUSE)
	$(PY) deploy/scripts/wheelhouse.py --dest $(WHEELHOUSE)

images: wheelhouse ## build the six images offline from the wheelhouse (docker build, or buildah on a debootstrap base)
	$(PY) deploy/scripts/images.py --wheelhouse $(WHEELHOUSE) --out $(IMAGES_OUT) --cache $(IMAGE_CACHE) \
	  --services $(IMAGE_SERVICES) --engine $(IMAGE_ENGINE)

# The run checks start the images from buildah's storage (podman run needs cgroups; see tests/deploy).
images-test: IMAGE_ENGINE = buildah
images-test: images ## build the images, list the lock's vulnerabilities, run every image as the chart does
	$(PY) deploy/scripts/audit.py --wheelhouse $(WHEELHOUSE) --tools-venv $(IMAGE_CACHE)/tools-venv --out $(IMAGES_OUT)
	PALIMPSEST_IMAGES_REPORT=$(abspath $(IMAGES_OUT))/images.json \
	  $(BIN)/pytest -q -p no:cacheprovider tests/deploy/test_images_run.py

image-tools-lock: $(STAMP) ## re-resolve deploy/requirements/tools.in (SBOM writer, pip-audit) with hashes
	{ echo '# Compiled from deploy/requirements/tools.in by `make image-tools-lock`; do not edit.'; \
	  $(BIN)/uv pip compile deploy/requirements/tools.in --generate-hashes --python-version 3.11 --no-header \
	    --no-annotate 2>/dev/null; } > deploy/requirements/tools.txt

clean: ## remove the virtual environment and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache
