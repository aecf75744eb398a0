#!/usr/bin/env bash
# ./run.sh [flags]   install on first use, then serve on 127.0.0.1:7860 (flags go to app.py)
# ./run.sh setup     only install
# ./run.sh test      install test requirements and run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
PY="$VENV/bin/python"
PYTHON=${PYTHON:-python3}

# Installs again only when a requirements file changed since the last successful install.
install() {
  local stamp="$VENV/.installed-$1" files=("${@:2}")
  [ -x "$PY" ] || "$PYTHON" -m venv "$VENV"
  local sum
  sum=$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
    return 0
  fi
  echo "Installing ${files[*]} into $VENV (first run takes a few minutes: torch is large) ..."
  "$PY" -m pip install --disable-pip-version-check -q --upgrade pip >/dev/null
  "$PY" -m pip install --disable-pip-version-check -q -r "${files[@]: -1}"
  echo "$sum" > "$stamp"
}

case "${1:-}" in
  setup)
    install app requirements.txt
    ;;
  test)
    shift
    install test requirements.txt requirements-test.txt
    exec "$PY" -m pytest "$@"
    ;;
  *)
    install app requirements.txt
    DMON_PID=""
    if command -v nvidia-smi >/dev/null 2>&1; then
      mkdir -p logs
      # nvidia-smi's own log beside the app's NVML samples; stopped when the app exits.
      nvidia-smi dmon -s um -o DT -f "logs/nvidia-smi-dmon.log" >/dev/null 2>&1 &
      DMON_PID=$!
    fi
    cleanup() { [ -n "$DMON_PID" ] && kill "$DMON_PID" 2>/dev/null || true; }
    trap cleanup EXIT
    trap 'cleanup; exit 130' INT
    trap 'cleanup; exit 143' TERM
    # Not exec: the trap must outlive python to stop nvidia-smi dmon. Job control (set -m) puts
    # python in a process group of its own: without it bash starts a background job with SIGINT
    # ignored, so a terminal's Ctrl-C never reached python (run.sh passed it on as SIGTERM: the
    # log said SIGTERM, and a second Ctrl-C did not exit at once; helper-72). Now the terminal's
    # signals reach this script alone, which passes each on as itself, once.
    set -m
    "$PY" app.py "$@" &
    APP_PID=$!
    set +m
    trap 'kill -TERM $APP_PID 2>/dev/null; wait $APP_PID || true; cleanup; exit 143' TERM
    trap 'kill -INT $APP_PID 2>/dev/null; wait $APP_PID || true; cleanup; exit 130' INT
    # A closed terminal (SIGHUP to the process group) drains as well; under nohup it stays ignored.
    # Passed on as itself, so that the app's log names it.
    trap 'kill -HUP $APP_PID 2>/dev/null; wait $APP_PID || true; cleanup; exit 129' HUP
    wait $APP_PID
    ;;
esac
