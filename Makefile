# ralph.py: the targets the README names. Each is a line or two.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
ARGS ?=
# The real agent CLIs of tests/e2e_real, pinned by package.json + package-lock.json.
AGENTS_DIR ?= .agents

.PHONY: setup setup-browser setup-postgres setup-sandbox agents canary test demo bench ralph plan install

setup: $(VENV)/.installed

# Editable in setuptools' strict mode: its .pth is a path line (to a tree of links in build/),
# where the default mode's import hook costs every Python start of the venv about 20 ms
# (docs/contributing.md).
$(VENV)/.installed: setup.cfg pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]' --config-settings editable_mode=strict
	touch $@

# The HTML report's tests open it in chromium: installed when missing (root with apt-get);
# otherwise those tests skip and say why.
setup-browser:
	@command -v chromium >/dev/null || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; else echo "chromium is not installed: the HTML report tests will be skipped (apt-get install chromium)"; fi; }

# The PostgreSQL store's tests start their own throwaway server (tests/pgserver.py) from the
# server binaries, installed when missing (root with apt-get); otherwise those tests skip and
# say why. Debian puts them in /usr/lib/postgresql/<version>/bin, off PATH. The system cluster
# the package may start is never used.
setup-postgres:
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -x "$$(pg_config --bindir 2>/dev/null)/initdb" ] || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; else echo "make setup-postgres: SKIPPED: the PostgreSQL server is not installed, so the PostgreSQL tests will be skipped (apt-get install postgresql)" >&2; fi; }

# The sandbox's tests run sessions inside bubblewrap (tests/e2e/test_sandbox_e2e.py): installed
# when missing (root with apt-get); otherwise those tests skip and say why.
setup-sandbox:
	@command -v bwrap >/dev/null || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; else echo "bubblewrap is not installed: the sandbox tests will be skipped (apt-get install bubblewrap)"; fi; }

# Without npm this is a loud skip (tests/e2e_real then skips, naming why), not a failure.
# `npm install` over the lock, not `npm ci`: npm leaves other platforms' optional packages
# of opencode-ai out of the lock, and `npm ci` then refuses it as out of sync.
agents: $(AGENTS_DIR)/.installed

$(AGENTS_DIR)/.installed: package.json package-lock.json
	@if ! command -v npm >/dev/null; then \
		echo "make agents: SKIPPED: npm is not installed, so tests/e2e_real will skip (apt-get install nodejs npm)" >&2; \
	else \
		mkdir -p $(AGENTS_DIR) && cp package.json package-lock.json $(AGENTS_DIR)/ && \
		npm install --prefix $(AGENTS_DIR) --no-audit --no-fund --loglevel=error && touch $@; \
	fi

# The Python set-up and the agent CLIs' npm install, most of a fresh clone's set-up (about 15
# and 50 s on 2 cores), run side by side; the apt-get steps go first, one at a time (one dpkg lock).
test: setup-browser setup-postgres setup-sandbox
	@$(MAKE) --no-print-directory -j2 --output-sync=target setup agents
	$(PY) -m pytest -n 4 --dist worksteal

demo: setup
	$(PY) demo/run_demo.py $(if $(ARGS),-- $(ARGS))

bench: setup
	$(PY) bench/run_all.py

# The newest release of each agent CLI through tests/e2e_real beside the pinned one, installed
# into .agents-latest/ (docs/agents.md, "The canary"). Never part of `make test` or .ci/run:
# the pinned suite is the gate. Exit 0 all green, 1 a break, 2 could not install.
canary: setup agents
	$(PY) -m canary --pinned-dir $(AGENTS_DIR) $(ARGS)

ralph: setup
	$(PY) ralph.py build $(ARGS)

plan: setup
	$(PY) ralph.py plan $(ARGS)

# Installs the `ralph` and `ralph-task` commands for the current user (pipx when present, else
# pip --user), and the Claude Code skills and hooks into this project's .claude/ (README).
install: setup
	if command -v pipx >/dev/null; then pipx install --force .; else $(PYTHON) -m pip install --user .; fi
	$(PY) ralph.py install --project .
