# ralph.py: the targets the README names. Each is a line or two.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
ARGS ?=

.PHONY: setup setup-browser test demo bench ralph plan install

setup: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

# The HTML report's tests open it in chromium: installed when missing (root with apt-get);
# otherwise those tests skip and say why.
setup-browser:
	@command -v chromium >/dev/null || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; else echo "chromium is not installed: the HTML report tests will be skipped (apt-get install chromium)"; fi; }

test: setup setup-browser
	$(PY) -m pytest -n 4

demo: setup
	$(PY) demo/run_demo.py

bench: setup
	$(PY) bench/run_all.py

ralph: setup
	$(PY) ralph.py build $(ARGS)

plan: setup
	$(PY) ralph.py plan $(ARGS)

# Installs the `ralph` and `ralph-task` commands for the current user (pipx when present, else
# pip --user), and the Claude Code skills and hooks into this project's .claude/ (README).
install: setup
	if command -v pipx >/dev/null; then pipx install --force .; else $(PYTHON) -m pip install --user .; fi
	$(PY) ralph.py install --project .
