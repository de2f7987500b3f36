#!/usr/bin/env bash
# Sets up a fresh machine, builds, and runs every test suite (lit, unit, model
# zoo). Ends with one line 'N passed, N failed'.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/conformance-venv.sh
bash scripts/models-venv.sh
exec /usr/bin/python3 test/run_tests.py
