#!/usr/bin/env bash
# Set up .venv from pyproject.toml (first run) and run every check: ruff (lint and format), mypy --strict,
# import-linter and the whole pytest suite, on every core (pytest-xdist). Extra arguments go to pytest
# (`-n 0` runs the tests in this process, one after the other).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/venv.sh
echo "== ruff"
"$VENV/bin/ruff" check apiserver devcluster tests hack
"$VENV/bin/ruff" format --check --quiet apiserver devcluster tests hack
echo "== mypy --strict"
"$VENV/bin/mypy"
echo "== import-linter"
"$VENV/bin/lint-imports" --no-cache
echo "== pytest"
# pytest exits 5 when it collected no test; set -e makes that a failure, as it should be. loadgroup keeps
# each xdist_group (the real control plane, the packaging wheels, the kubectl server) on one worker.
"$VENV/bin/pytest" -n auto --dist loadgroup "$@"
