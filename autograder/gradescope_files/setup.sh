#!/usr/bin/env bash
# Gradescope image set-up: Ubuntu 22.04, run once as root while the image is built.
# pip only, nothing built from source. Safe to run again; stops at the first failure.
set -euo pipefail

PYTHON=python3.11
VENV=/opt/attention-kit
SANDBOX_USER=sandbox
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The default Linux torch wheel is a multi-GB CUDA build; Gradescope has no GPU.
TORCH_INDEX="${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"

export DEBIAN_FRONTEND=noninteractive
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends "$PYTHON" "$PYTHON-venv"
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --no-cache-dir --index-url "$TORCH_INDEX" "torch==2.13.0"
"$VENV/bin/python" -m pip install --quiet --no-cache-dir -r "$SOURCE/requirements-gradescope.txt"
# run_autograder uses the first python3 on PATH: make it this one.
ln -sf "$VENV/bin/python" /usr/local/bin/python3

if ! id -u "$SANDBOX_USER" >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin "$SANDBOX_USER"
fi

# Fail the build now, not at the first submission.
cd "$SOURCE"
"$VENV/bin/python" -c "import torch, yaml, pytest, autograder.runner; assert not torch.version.cuda, 'CUDA build of torch'"
echo "setup.sh: ready (torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)'))"
