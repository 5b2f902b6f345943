#!/usr/bin/env bash
# ASB (Agent Security Bench) for `vetobench run --bench asb`: a checkout of the benchmark at the
# pinned commit and its own virtual environment, kept apart from vetobench.
#
#   1. clone https://github.com/agiresearch/ASB into third_party/ASB and check out the pin
#   2. create third_party/ASB/.venv (ASB wants Python 3.11)
#   3. install scripts/requirements-asb.txt: everything main_attacker.py and vetobench's launcher
#      import, including what ASB's own requirements.txt misses (python-dotenv, the langchain
#      packages, jsonlines, tqdm); torch first, at the version that file pins, as the CPU wheel
#      (ASB uses it only for seeding)
#   4. check that ASB's modules and main_attacker.py import, and say "ASB environment OK"
#
# Idempotent: a checkout already at the pin is kept, and the install is skipped when the venv
# passes the import check with the same requirements file as last time. The settings defaults
# match (paths.asb_dir: third_party/ASB, paths.asb_python: third_party/ASB/.venv/bin/python).
#
# Environment:
#   PYTHON           interpreter for the venv (default python3)
#   ASB_DIR          where the checkout goes (default third_party/ASB, relative to the repo root)
#   ASB_REPO         where to clone from (default https://github.com/agiresearch/ASB)
#   TORCH_INDEX_URL  index with CPU torch wheels (default https://download.pytorch.org/whl/cpu).
#                    There is no fallback to the default index: on Linux it serves the CUDA build
#                    (several GB); when this index cannot be reached the script stops and says so
set -euo pipefail
cd "$(dirname "$0")/.."

PIN=1f561dccf92d55302368fa67679b4ba9d9c8fdc4
PYTHON=${PYTHON:-python3}
ASB=${ASB_DIR:-third_party/ASB}
ASB_REPO=${ASB_REPO:-https://github.com/agiresearch/ASB}
TORCH_INDEX_URL=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
REQS=scripts/requirements-asb.txt
# the one torch version, pinned in the requirements file (its CPU build `+cpu` satisfies it)
TORCH_PIN=$(grep -E '^torch==[0-9][0-9A-Za-z.]*$' "$REQS" | head -n 1 || true)
TORCH_VERSION=${TORCH_PIN#torch==}
VENV="$ASB/.venv"
VPY="$VENV/bin/python"
STAMP="$VENV/.vetobench-requirements"

say() { printf 'setup_asb_env: %s\n' "$*"; }
die() { printf 'setup_asb_env: error: %s\n' "$*" >&2; exit 1; }

[ -n "$TORCH_PIN" ] || die "$REQS does not pin torch (a line torch==<version>)"
command -v git >/dev/null || die "git is not installed"
command -v "$PYTHON" >/dev/null || die "$PYTHON not found (set PYTHON to a Python 3.11 interpreter)"

# --- 1. checkout at the pin ------------------------------------------------------------------
if [ -d "$ASB/.git" ]; then
  head=$(git -C "$ASB" rev-parse HEAD)
  if [ "$head" = "$PIN" ]; then
    say "checkout $ASB is at $PIN (kept)"
  else
    if [ -n "$(git -C "$ASB" status --porcelain --untracked-files=no)" ]; then
      die "$ASB is at $head and has local changes; commit or discard them, or move the checkout away"
    fi
    if ! git -C "$ASB" cat-file -e "$PIN^{commit}" 2>/dev/null; then
      say "fetching $PIN into $ASB"
      git -C "$ASB" fetch --quiet origin || die "cannot fetch from $(git -C "$ASB" remote get-url origin 2>/dev/null || echo origin)"
    fi
    say "checking out $PIN in $ASB (was $head)"
    git -C "$ASB" checkout --quiet --detach "$PIN"
  fi
elif [ -e "$ASB" ]; then
  die "$ASB exists but is not a git checkout; move it away or set ASB_DIR"
else
  say "cloning $ASB_REPO into $ASB"
  mkdir -p "$(dirname "$ASB")"
  git clone --quiet "$ASB_REPO" "$ASB" || die "cannot clone $ASB_REPO"
  git -C "$ASB" checkout --quiet --detach "$PIN" || die "$ASB_REPO has no commit $PIN"
  say "checked out $PIN"
fi
[ -f "$ASB/main_attacker.py" ] || die "$ASB has no main_attacker.py"

# --- 2. the venv -----------------------------------------------------------------------------
version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ ! -x "$VPY" ]; then
  [ "$version" = "3.11" ] || say "warning: $PYTHON is Python $version; ASB is tested with 3.11"
  say "creating $VENV with $PYTHON (Python $version)"
  if ! "$PYTHON" -m venv "$VENV"; then
    rm -rf "$VENV"
    die "$PYTHON cannot create a venv with pip (on Debian/Ubuntu: apt-get install python3-venv, or python$version-venv)"
  fi
else
  say "venv $VENV exists (Python $("$VPY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])'))"
fi

# --- 3. requirements -------------------------------------------------------------------------
import_check() {
  (cd "$ASB" && ./.venv/bin/python - <<'PY'
import os
import sys
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.getcwd())
# what main_attacker.py imports (directly and through ASB's modules), and what launch.py patches
import click, dotenv, jsonlines, numpy, openai, pandas, pympler, torch, tqdm  # noqa: F401,E401
import langchain_chroma, langchain_core, langchain_ollama, langchain_openai  # noqa: F401,E401
from aios.llm_core import llms  # noqa: F401
from aios.llm_core.llm_classes import model_registry  # noqa: F401
from aios.llm_core.llm_classes.base_llm import BaseLLM  # noqa: F401
from aios.scheduler.fifo_scheduler import FIFOScheduler  # noqa: F401
from pyopenagi.agents.agent_factory import AgentFactory  # noqa: F401
from pyopenagi.agents.base_agent import BaseAgent  # noqa: F401
from pyopenagi.agents.interact import Interactor  # noqa: F401
from pyopenagi.agents.react_agent_attack import ReactAgentAttack  # noqa: F401
from pyopenagi.utils.chat_template import Response  # noqa: F401
print("imports: python %s, openai %s, torch %s, pandas %s" % (sys.version.split()[0], openai.__version__, torch.__version__, pandas.__version__))
PY
  )
}

want=$(sha256sum "$REQS" | cut -d' ' -f1)
checked=""
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && checked=$(import_check 2>/dev/null); then
  say "requirements already installed from $REQS (kept)"
else
  checked=""
  rm -f "$STAMP"
  have=$("$VPY" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)
  if [ "$have" = "$TORCH_VERSION" ]; then
    say "torch $TORCH_VERSION is installed (kept)"
  else
    say "installing $TORCH_PIN (CPU wheel from $TORCH_INDEX_URL)${have:+, replacing torch $have}"
    "$VPY" -m pip install -q --index-url "$TORCH_INDEX_URL" "$TORCH_PIN" ||
      die "cannot install $TORCH_PIN from $TORCH_INDEX_URL; set TORCH_INDEX_URL to an index with the CPU wheels (the default index would bring the CUDA build, several GB)"
  fi
  say "installing $REQS into $VENV"
  "$VPY" -m pip install -q -r "$REQS" || die "pip could not install $REQS"
fi

# --- 4. check --------------------------------------------------------------------------------
say "checking ASB's imports"
if [ -n "$checked" ]; then
  echo "$checked"
elif ! import_check; then
  die "ASB's modules do not import in $VENV (see the traceback above)"
fi
if ! (cd "$ASB" && ./.venv/bin/python main_attacker.py --help >/dev/null 2>&1); then
  die "$ASB/main_attacker.py --help fails in $VENV; run it by hand to see why"
fi
echo "$want" > "$STAMP"
say "ASB environment OK: $ASB at $PIN, Python $VPY"
echo "ASB environment OK"
