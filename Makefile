# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# the suite runs on TEST_WORKERS processes (pytest-xdist); the cases for the JAX backend share one (tests/conftest.py)
TEST_WORKERS ?= 2

.PHONY: install browser demo docs test test-fast clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# compat editable mode keeps hydra_plugins/ visible to Hydra's namespace scan (Hydra issue #3252)
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,jax,docs,mlflow]" --config-settings editable_mode=compat
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) -m harness batch_size=8,32,64,128 -m

# The report's browser test needs Debian's chromium and its driver; install them when missing.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver; \
	fi

# the documentation site, offline, into site/ (open site/index.html); --strict fails on any warning (mkdocs.yml)
docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

test: install browser docs
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# the edit-test loop: everything but the `slow` end-to-end tests
test-fast: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache
