#!/usr/bin/env bash
# Gradescope image set-up, run once as root while the image is built: Gradescope's Ubuntu 22.04
# base image, or a minimal Debian. Safe to run again. Fails the build (non-zero exit) when the
# image could not grade, never later at the first student.
#
# Nothing here touches the system python3: Gradescope's own harness needs it as it is.
# run_autograder calls this kit's interpreter by its absolute path, $VENV/bin/python.
set -euo pipefail

KIT_PYTHON=python3.11                 # the wheels in requirements-gradescope.txt are for CPython 3.11
VENV=/opt/attention-kit
PIP_PIN="pip==26.3"                   # jammy's bundled pip 22.0 fails on PyTorch's index
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The default Linux torch wheel is a multi-GB CUDA build; Gradescope has no GPU. The kit's
# container test points TORCH_INDEX at a local copy of this index.
TORCH_INDEX="${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1

say() { echo "setup.sh: $*"; }

# True when $KIT_PYTHON exists and can make a venv with pip in it (jammy ships python3.11 and
# its venv module as separate packages, and a minimal Debian has neither).
can_make_venv() {
  command -v "$KIT_PYTHON" >/dev/null 2>&1 || return 1
  local probe
  probe="$(mktemp -d)"
  "$KIT_PYTHON" -m venv "$probe/venv" >/dev/null 2>&1
  local status=$?
  rm -rf "$probe"
  return $status
}

if ! can_make_venv; then
  say "installing $KIT_PYTHON and its venv module from the distribution"
  apt-get update -q
  apt-get install -y -q --no-install-recommends "$KIT_PYTHON" "$KIT_PYTHON-venv" ca-certificates
  can_make_venv || { say "$KIT_PYTHON -m venv still fails after installing $KIT_PYTHON-venv"; exit 1; }
fi

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  rm -rf "$VENV"
  "$KIT_PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet "$PIP_PIN"
# torch alone from the CPU index; everything else, torch's own dependencies included, from the lock.
"$VENV/bin/python" -m pip install --quiet --no-deps --index-url "$TORCH_INDEX" "torch==2.13.0"
"$VENV/bin/python" -m pip install --quiet -r "$SOURCE/requirements-gradescope.txt"
"$VENV/bin/python" -m pip check

# Fail the build now, not at the first student: grade the reference solution with run_autograder
# itself, in a scratch copy of Gradescope's layout, and require full marks.
smoke="$(mktemp -d /tmp/attention-kit-smoke.XXXXXX)"
trap 'rm -rf "$smoke"' EXIT
mkdir -p "$smoke/submission"
cp -a "$SOURCE" "$smoke/source"
cp "$SOURCE/run_autograder" "$smoke/run_autograder"
cp "$SOURCE/solution/attention.py" "$SOURCE/solution/mha.py" "$smoke/submission/"
echo '{"users": [], "previous_submissions": []}' > "$smoke/submission_metadata.json"
AUTOGRADER_ROOT="$smoke" "$smoke/run_autograder" > "$smoke/log" 2>&1 || true
if ! "$VENV/bin/python" - "$smoke/results/results.json" <<'EOF'
import json, sys
results = json.load(open(sys.argv[1]))
extra = results.get("extra_data", {})
full = extra.get("max_score", 0) + extra.get("extra_credit_max", 0)
if extra.get("grader_error") or not full or results.get("score") != full:
    sys.exit(f"the reference solution scored {results.get('score')} of {full}: {results.get('output', '')[:300]}")
EOF
then
  say "smoke test failed; run_autograder's log:"
  tail -n 40 "$smoke/log"
  exit 1
fi
say "ready: torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)'), the reference scored full marks"
