#!/usr/bin/env bash
# Set up .venv from pyproject.toml (first run) and run every check: ruff (lint and format), mypy --strict,
# import-linter and the whole pytest suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/venv.sh
echo "== ruff"
"$VENV/bin/ruff" check apiserver tests hack
"$VENV/bin/ruff" format --check --quiet apiserver tests hack
echo "== mypy --strict"
"$VENV/bin/mypy"
echo "== import-linter"
"$VENV/bin/lint-imports" --no-cache
echo "== pytest"
# pytest exits 5 when it collected no test; set -e makes that a failure, as it should be.
"$VENV/bin/pytest" "$@"
