#!/usr/bin/env bash
# Set up everything the tests need (venv, pinned packages, Debian's chromium and chromium-driver
# when missing, redis-server for the Celery test, and nginx for the deployment's slow-client test) and run
# lint plus the whole test suite, browser and slow tests included, property tests at full example counts,
# on one pytest-xdist worker per core, a file at a time (the browser tests as one, see tests/conftest.py), in
# collection order: the browser tests, then the slow ones, first.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt -e .
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing Debian's chromium and chromium-driver for the browser tests"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
if ! command -v redis-server >/dev/null; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing Debian's redis-server for the Celery test (background jobs on REDIS_URL)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing Debian's nginx for the deployment test (nginx in front of gunicorn, as the Dockerfile runs it)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx >/dev/null
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/python -m pytest --headless -q --hypothesis-profile=full -n auto --dist loadfile --no-loadscope-reorder "$@"
