#!/usr/bin/env bash
# Build and start aex-toolgate (the Agent Exchange tool-call value gate) from your own checkout of
# open-experiments/agent-exchange, for vetobench's `kind: toolgate` judge.
# Run `scripts/run-toolgate.sh --help` for usage. This script never downloads anything.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<'EOF'
Usage: scripts/run-toolgate.sh [--build-only | --no-build] [--help]

Builds aex-toolgate from your checkout of open-experiments/agent-exchange and runs it in the
foreground (Ctrl-C stops it). Nothing is downloaded: the build runs with GOPROXY=off and
GOTOOLCHAIN=local, so the Go modules the gate needs must already be in your module cache
(if the build says they are missing, run `go mod download` in the module directory yourself).

Options:
  --build-only   build bin/aex-toolgate and exit
  --no-build     run an existing bin/aex-toolgate without rebuilding
  -h, --help     show this help

Environment (defaults in brackets):
  AEX_DIR          agent-exchange checkout; relative paths are taken from the vetobench root
                   [third_party/agent-exchange]
  TOOLGATE_MODULE  the gate's Go module directory inside AEX_DIR [src/aex-toolgate]
  TOOLGATE_PKG     the main package, relative to that module [./src]
  TOOLGATE_BIN     where the binary goes [$AEX_DIR/bin/aex-toolgate]
  PORT             port the gate listens on [8090]
  POLICY_FILE      the provider policy (JSON); required by the gate. When unset:
                   configs/policies/toolgate.json if it exists, else the gate's example
                   accounts-payable policy ($AEX_DIR/src/internal/toolgate/testdata/policy.json)
  OPERATOR_TOKEN   the operator token for /v1/decide, /v1/holds and /v1/records. When unset, a
                   random one is generated (openssl rand) and printed once with the line to
                   export it for vetobench
  MODE             full (argument values checked) or scope (scope check only) [full]
  Passed through unchanged when set: UPSTREAM_URL, UPSTREAM_PREFIX, UPSTREAM_TIMEOUT_SECONDS,
  EXPOSE_ARGS, NATS_URL, ENVIRONMENT (see shared/spec/toolgate.md §2.5).

SECURITY: the gate listens on ALL interfaces (":PORT"; it has no bind-address setting), serves
plain HTTP, and POST /v1/tools/{tool} has no authentication. Run it on a host whose firewall
blocks PORT from other machines, or in a container published on loopback only, e.g.
  docker run -p 127.0.0.1:8090:8090 ...

vetobench judge config (configs/vetobench.yaml):
  judges:
    toolgate:
      kind: toolgate
      url: http://127.0.0.1:8090
      operator_token: ${TOOLGATE_TOKEN}
      policy: ap-assistant-v1        # optional: names the policy in audit records
EOF
}

die() {
  echo "run-toolgate: $*" >&2
  exit 1
}

BUILD=1
RUN=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --build-only) RUN=0 ;;
    --no-build) BUILD=0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
[[ $BUILD -eq 1 || $RUN -eq 1 ]] || die "--build-only and --no-build together do nothing"

AEX_DIR="${AEX_DIR:-third_party/agent-exchange}"
[[ "$AEX_DIR" = /* ]] || AEX_DIR="$ROOT/$AEX_DIR"
TOOLGATE_MODULE="${TOOLGATE_MODULE:-src/aex-toolgate}"
TOOLGATE_PKG="${TOOLGATE_PKG:-./src}"
TOOLGATE_BIN="${TOOLGATE_BIN:-$AEX_DIR/bin/aex-toolgate}"
[[ "$TOOLGATE_BIN" = /* ]] || TOOLGATE_BIN="$ROOT/$TOOLGATE_BIN"
MODULE_DIR="$AEX_DIR/$TOOLGATE_MODULE"

[[ -d "$AEX_DIR" ]] || die "no agent-exchange checkout at $AEX_DIR (clone open-experiments/agent-exchange there, or set AEX_DIR)"

# ---------------------------------------------------------------------------------------------
# build

if [[ $BUILD -eq 1 ]]; then
  command -v go >/dev/null 2>&1 || die "go is not installed (the gate is a Go service; see https://go.dev/doc/install)"
  [[ -f "$MODULE_DIR/go.mod" ]] || die "no go.mod in $MODULE_DIR (set TOOLGATE_MODULE to the gate's module directory inside AEX_DIR)"
  mkdir -p "$(dirname "$TOOLGATE_BIN")"
  echo "run-toolgate: building $TOOLGATE_PKG in $MODULE_DIR with $(go version | awk '{print $3}') → $TOOLGATE_BIN" >&2
  if ! (cd "$MODULE_DIR" && GOPROXY=off GOTOOLCHAIN=local go build -o "$TOOLGATE_BIN" "$TOOLGATE_PKG"); then
    cat >&2 <<EOF
run-toolgate: the build failed. If Go reported missing modules, fetch them yourself (this script
never downloads):   (cd "$MODULE_DIR" && go mod download)
If it reported a Go version, the module's go.mod needs a newer Go than the one installed.
EOF
    exit 1
  fi
fi
[[ $RUN -eq 1 ]] || exit 0

# ---------------------------------------------------------------------------------------------
# run

[[ -x "$TOOLGATE_BIN" ]] || die "no binary at $TOOLGATE_BIN (run without --no-build first)"

PORT="${PORT:-8090}"
[[ "$PORT" =~ ^[0-9]+$ && "$PORT" -ge 1 && "$PORT" -le 65535 ]] || die "PORT must be a port number, got '$PORT'"

MODE="${MODE:-full}"
[[ "$MODE" == "full" || "$MODE" == "scope" ]] || die "MODE must be full or scope, got '$MODE'"

if [[ -z "${POLICY_FILE:-}" ]]; then
  if [[ -f "$ROOT/configs/policies/toolgate.json" ]]; then
    POLICY_FILE="$ROOT/configs/policies/toolgate.json"
  elif [[ -f "$AEX_DIR/src/internal/toolgate/testdata/policy.json" ]]; then
    POLICY_FILE="$AEX_DIR/src/internal/toolgate/testdata/policy.json"
    echo "run-toolgate: POLICY_FILE not set; using the gate's EXAMPLE accounts-payable policy: $POLICY_FILE" >&2
  else
    die "POLICY_FILE is required (the gate will not start without a provider policy)"
  fi
fi
[[ -f "$POLICY_FILE" ]] || die "POLICY_FILE not found: $POLICY_FILE"

if [[ -z "${OPERATOR_TOKEN:-}" ]]; then
  if command -v openssl >/dev/null 2>&1; then
    OPERATOR_TOKEN="$(openssl rand -hex 24)"
  else
    OPERATOR_TOKEN="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
  fi
  cat >&2 <<EOF
run-toolgate: OPERATOR_TOKEN was not set; generated one for this run. For vetobench, in the shell
that starts the proxy:
  export TOOLGATE_TOKEN=$OPERATOR_TOKEN
EOF
fi

cat >&2 <<EOF
run-toolgate: starting aex-toolgate on :$PORT (ALL interfaces, plain HTTP; /v1/tools is unauthenticated:
  firewall the port or run it in a container published on 127.0.0.1), mode $MODE, policy $POLICY_FILE
EOF

export PORT MODE POLICY_FILE OPERATOR_TOKEN
exec "$TOOLGATE_BIN"
