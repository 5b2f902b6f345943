#!/usr/bin/env bash
# AgentDojo for `vetobench run --bench agentdojo` (docs/agentdojo.md): its own virtual environment
# with the `agentdojo` package from PyPI, kept apart from vetobench.
#
#   bash scripts/setup_agentdojo_env.sh [--venv DIR] [--with-transformers]
#
#   1. create DIR (default .venv-agentdojo; the experiment key agentdojo.python defaults to
#      .venv-agentdojo/bin/python) with Python 3.10+ (AgentDojo's requirement; tested with 3.11)
#   2. install scripts/requirements-agentdojo.txt: agentdojo==0.1.35 with openai==1.109.1 and every
#      other package pinned (a pip freeze), so the install is reproducible
#   3. --with-transformers: the extra AgentDojo's `transformers_pi_detector` defense needs — a CPU
#      torch (pinned below) and scripts/requirements-agentdojo-transformers.txt. PyPI has CPU-only
#      torch wheels for macOS and Linux aarch64 only; on Linux x86_64 its wheel pulls the CUDA
#      libraries (several GB), so there the script refuses unless TORCH_INDEX_URL names an index with
#      the CPU build (e.g. https://download.pytorch.org/whl/cpu). The detector's model
#      (protectai/deberta-v3-base-prompt-injection-v2) is downloaded from Hugging Face on first use.
#   4. check that AgentDojo and vetobench's launcher import, and say "AgentDojo environment OK"
#
# Idempotent: the install is skipped when the venv passes the import check with the same
# requirements as last time.
#
# Environment:
#   PYTHON           interpreter for the venv (default python3)
#   TORCH_INDEX_URL  (--with-transformers on Linux x86_64) index with CPU torch wheels
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv-agentdojo
EXTRA=0
REQS=scripts/requirements-agentdojo.txt
TF_REQS=scripts/requirements-agentdojo-transformers.txt
TORCH_PIN=torch==2.9.1
LAUNCHER=src/adapters/agentdojo/launch.py

say() { printf 'setup_agentdojo_env: %s\n' "$*"; }
die() { printf 'setup_agentdojo_env: error: %s\n' "$*" >&2; exit 1; }
usage() { printf 'usage: bash scripts/setup_agentdojo_env.sh [--venv DIR] [--with-transformers]\n' >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --venv) [ $# -ge 2 ] && [ -n "$2" ] || usage; VENV=$2; shift 2 ;;
    --venv=*) VENV=${1#--venv=}; [ -n "$VENV" ] || usage; shift ;;
    --with-transformers) EXTRA=1; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) printf 'setup_agentdojo_env: unknown option %s\n' "$1" >&2; usage ;;
  esac
done
VPY="$VENV/bin/python"
STAMP="$VENV/.vetobench-requirements"

command -v "$PYTHON" >/dev/null || die "$PYTHON not found (set PYTHON to a Python 3.10+ interpreter)"
[ -f "$REQS" ] || die "$REQS is missing"

# the extra's torch: refuse early when no CPU wheel can be had (before anything is installed)
TORCH_FROM=()
if [ "$EXTRA" = 1 ]; then
  [ -f "$TF_REQS" ] || die "$TF_REQS is missing"
  os=$(uname -s); arch=$(uname -m)
  if [ "$os" = Linux ] && [ "$arch" = x86_64 ]; then
    if [ -z "${TORCH_INDEX_URL:-}" ]; then
      die "PyPI has no CPU-only torch wheel for Linux x86_64 (its $TORCH_PIN pulls the CUDA libraries, several GB); set TORCH_INDEX_URL to an index with the CPU build, e.g. TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu"
    fi
    TORCH_FROM=(--index-url "$TORCH_INDEX_URL")
  fi
fi

# --- 1. the venv -----------------------------------------------------------------------------
version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || die "$PYTHON is Python $version; AgentDojo needs 3.10 or newer"
if [ ! -x "$VPY" ]; then
  say "creating $VENV with $PYTHON (Python $version)"
  if ! "$PYTHON" -m venv "$VENV"; then
    rm -rf "$VENV"
    die "$PYTHON cannot create a venv with pip (on Debian/Ubuntu: apt-get install python3-venv, or python$version-venv)"
  fi
else
  say "venv $VENV exists (Python $("$VPY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])'))"
fi

# --- 2./3. requirements ----------------------------------------------------------------------
import_check() {
  "$VPY" - "$EXTRA" <<'PY'
import sys
import warnings

warnings.filterwarnings("ignore")
import agentdojo, openai  # noqa: F401,E401
from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline, PipelineConfig  # noqa: F401
from agentdojo.task_suite.load_suites import get_suites
from importlib.metadata import version
line = "imports: python %s, agentdojo %s, openai %s, suites %s" % (
    sys.version.split()[0], version("agentdojo"), openai.__version__, ", ".join(get_suites("v1.2.2")))
if sys.argv[1] == "1":
    import torch, transformers  # noqa: F401,E401
    line += ", torch %s, transformers %s" % (torch.__version__, transformers.__version__)
print(line)
PY
}

want=$( { cat "$REQS"; [ "$EXTRA" = 1 ] && { cat "$TF_REQS"; echo "$TORCH_PIN ${TORCH_INDEX_URL:-pypi}"; }; true; } | sha256sum | cut -d' ' -f1)
checked=""
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && checked=$(import_check 2>/dev/null); then
  say "requirements already installed (kept)"
else
  rm -f "$STAMP"
  say "installing $REQS into $VENV"
  "$VPY" -m pip install -q -r "$REQS" || die "pip could not install $REQS"
  if [ "$EXTRA" = 1 ]; then
    say "installing $TORCH_PIN (CPU build${TORCH_INDEX_URL:+ from $TORCH_INDEX_URL}) and $TF_REQS"
    "$VPY" -m pip install -q "${TORCH_FROM[@]}" "$TORCH_PIN" || die "cannot install $TORCH_PIN${TORCH_INDEX_URL:+ from $TORCH_INDEX_URL}"
    "$VPY" -m pip install -q -r "$TF_REQS" || die "pip could not install $TF_REQS"
  fi
  checked=""
fi

# --- 4. check --------------------------------------------------------------------------------
say "checking AgentDojo's imports"
if [ -n "$checked" ]; then
  echo "$checked"
elif ! import_check; then
  die "AgentDojo does not import in $VENV (see the traceback above)"
fi
"$VPY" "$LAUNCHER" plan --suites banking >/dev/null || die "vetobench's launcher cannot plan with AgentDojo in $VENV ($VPY $LAUNCHER plan --suites banking)"
echo "$want" > "$STAMP"
say "AgentDojo environment OK: $VPY"
echo "AgentDojo environment OK"
