#!/usr/bin/env bash
# Set up a virtual environment with the pinned requirements and serve the page on $PORT (8050).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt -e .
exec .venv/bin/python app.py
