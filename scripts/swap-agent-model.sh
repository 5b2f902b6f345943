#!/usr/bin/env bash
# Swap the agent model served by deploy/openshift/vllm-agent.yaml (GPU0, one model at a time).
# Run `scripts/swap-agent-model.sh --help` for usage.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAMESPACE="${VETOBENCH_NAMESPACE:-vetobench}"
DEPLOYMENT=vllm-agent
ROUTE=vllm-agent
SECRET=vllm-secrets
CA_DEFAULT="$(dirname "$ROOT")/venice-ca.crt"
KNOWN_MODELS=(qwen3-8b-test qwen3.8-27b muse-glimmer-30b gemma4-31b)

usage() {
  cat <<EOF
Usage: scripts/swap-agent-model.sh <served name>
       scripts/swap-agent-model.sh --help

Points the vllm-agent Deployment (namespace ${NAMESPACE}) at another model with
\`oc set env\`, waits for the rollout, stops early with the pod's last log lines if it
crash-loops, then polls the Route's /v1/models until the new served name is listed and prints
the smoke command to run next.

Known models (served name: Hugging Face id, tool parser, extra vLLM flags):
  qwen3-8b-test      Qwen/Qwen3-8B, hermes
  qwen3.8-27b        Qwen/Qwen3.8-27B, qwen3_xml,
                     --language-model-only --reasoning-parser qwen3 --max-num-seqs 64
  muse-glimmer-30b   not decided yet: give SWAP_MODEL_ID and SWAP_TOOL_PARSER
  gemma4-31b         not decided yet: give SWAP_MODEL_ID and SWAP_TOOL_PARSER

Needs: oc (logged in to the cluster), curl, base64.

Environment (defaults in brackets):
  VETOBENCH_NAMESPACE   namespace [vetobench]
  VETOBENCH_AGENT_URL   the agent route incl. /v1 [https://<host of route ${ROUTE}>/v1]
  VETOBENCH_CA_BUNDLE   CA bundle that signs the route's certificate
                        [${CA_DEFAULT} if it exists, else the system trust store]
  VLLM_API_KEY          bearer key of the route [read from Secret ${SECRET}; never printed]
  SWAP_MODEL_ID, SWAP_TOOL_PARSER, SWAP_EXTRA_ARGS
                        override the table's Hugging Face id, tool parser, extra flags
  SWAP_TIMEOUT_S        give up after this many seconds [3600, the startup probe's 60 min]
  SWAP_POLL_S           seconds between checks [10]

Exit status: 0 served, 1 failed (crash loop, timeout, missing tool), 2 usage error.
EOF
}

die() {
  echo "swap-agent-model: $*" >&2
  exit 1
}

usage_error() {
  echo "swap-agent-model: $*" >&2
  echo >&2
  usage >&2
  exit 2
}

# The model table: served name -> MODEL_ID, TOOL_PARSER, EXTRA_ARGS (empty MODEL_ID = not decided).
lookup_model() {
  MODEL_ID="" TOOL_PARSER="" EXTRA_ARGS=""
  case "$1" in
    qwen3-8b-test)
      MODEL_ID=Qwen/Qwen3-8B TOOL_PARSER=hermes ;;
    qwen3.8-27b)
      # a vision-language model: --language-model-only skips the vision tower
      MODEL_ID=Qwen/Qwen3.8-27B TOOL_PARSER=qwen3_xml
      EXTRA_ARGS="--language-model-only --reasoning-parser qwen3 --max-num-seqs 64" ;;
    muse-glimmer-30b | gemma4-31b)
      ;;
    *)
      return 1 ;;
  esac
}

if [[ $# -ne 1 ]]; then
  usage_error "expected exactly one served name"
fi
case "$1" in
  -h | --help)
    usage
    exit 0 ;;
  -*)
    usage_error "unknown option: $1" ;;
esac

NAME="$1"
if ! lookup_model "$NAME"; then
  usage_error "unknown model '$NAME' (known: ${KNOWN_MODELS[*]})"
fi
MODEL_ID="${SWAP_MODEL_ID:-$MODEL_ID}"
TOOL_PARSER="${SWAP_TOOL_PARSER:-$TOOL_PARSER}"
EXTRA_ARGS="${SWAP_EXTRA_ARGS-$EXTRA_ARGS}"
if [[ -z "$MODEL_ID" || -z "$TOOL_PARSER" ]]; then
  usage_error "$NAME: the Hugging Face id and tool parser are not decided yet (docs/cluster-request.md); give SWAP_MODEL_ID=... SWAP_TOOL_PARSER=..."
fi

TIMEOUT_S="${SWAP_TIMEOUT_S:-3600}"
POLL_S="${SWAP_POLL_S:-10}"
[[ "$TIMEOUT_S" =~ ^[0-9]+$ ]] || usage_error "SWAP_TIMEOUT_S must be a whole number of seconds"
[[ "$POLL_S" =~ ^[0-9]+$ ]] || usage_error "SWAP_POLL_S must be a whole number of seconds"

for tool in oc curl base64; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found on PATH"
done

ocn() {
  oc -n "$NAMESPACE" "$@"
}

# --- 1. point the Deployment at the new model ---------------------------------------------------
current="$(ocn get "deployment/$DEPLOYMENT" \
  -o 'jsonpath={.spec.template.spec.containers[0].env[?(@.name=="SERVED_NAME")].value}')" \
  || die "cannot read deployment/$DEPLOYMENT in namespace $NAMESPACE (logged in? applied deploy/openshift/vllm-agent.yaml?)"
echo "agent model: ${current:-?} -> $NAME ($MODEL_ID, tool parser $TOOL_PARSER${EXTRA_ARGS:+, $EXTRA_ARGS})"

ocn set env "deployment/$DEPLOYMENT" \
  "MODEL_ID=$MODEL_ID" "SERVED_NAME=$NAME" "TOOL_PARSER=$TOOL_PARSER" "EXTRA_ARGS=$EXTRA_ARGS" >/dev/null

deadline=$((SECONDS + TIMEOUT_S))

# --- 2. wait for the rollout; stop early on a crash loop -----------------------------------------
# One line per pod: name|served name|restarts|waiting reason|ready ("|": empty fields survive read).
pod_states() {
  ocn get pods -l "app.kubernetes.io/name=$DEPLOYMENT" -o \
    'jsonpath={range .items[*]}{.metadata.name}{"|"}{.spec.containers[0].env[?(@.name=="SERVED_NAME")].value}{"|"}{.status.containerStatuses[0].restartCount}{"|"}{.status.containerStatuses[0].state.waiting.reason}{"|"}{.status.containerStatuses[0].ready}{"\n"}{end}'
}

fail_with_logs() {
  local pod="$1" why="$2" restarts="$3"
  echo "swap-agent-model: pod $pod: $why; its last log lines:" >&2
  if [[ "$restarts" =~ ^[1-9] ]]; then
    ocn logs "$pod" --previous --tail=40 >&2 || ocn logs "$pod" --tail=40 >&2 || true
  else
    ocn logs "$pod" --tail=40 >&2 || true
  fi
  exit 1
}

echo "waiting for the rollout of deployment/$DEPLOYMENT (up to ${TIMEOUT_S}s; the first start downloads the model)"
while :; do
  states="$(pod_states)" || states=""
  while IFS='|' read -r pod served restarts reason ready; do
    [[ -n "$pod" && "$served" == "$NAME" ]] || continue
    case "$reason" in
      CrashLoopBackOff | CreateContainerConfigError | CreateContainerError | InvalidImageName | ErrImagePull | ImagePullBackOff)
        fail_with_logs "$pod" "$reason" "${restarts:-0}" ;;
    esac
    if [[ "${restarts:-0}" =~ ^[1-9] && "$ready" != "true" ]]; then
      fail_with_logs "$pod" "restarted $restarts time(s)" "$restarts"
    fi
  done <<<"$states"
  status="$(ocn rollout status "deployment/$DEPLOYMENT" --watch=false 2>&1)" || status=""
  [[ "$status" == *"successfully rolled out"* ]] && break
  ((SECONDS < deadline)) || die "timed out after ${TIMEOUT_S}s waiting for the rollout (${status:-no status})"
  sleep "$POLL_S"
done
echo "rollout done"

# --- 3. poll the Route until the served name is listed ------------------------------------------
if [[ -n "${VETOBENCH_AGENT_URL:-}" ]]; then
  url="${VETOBENCH_AGENT_URL%/}"
else
  host="$(ocn get "route/$ROUTE" -o 'jsonpath={.spec.host}')" || die "cannot read route/$ROUTE"
  [[ -n "$host" ]] || die "route/$ROUTE has no host"
  url="https://$host/v1"
fi

curl_tls=()
if [[ -n "${VETOBENCH_CA_BUNDLE:-}" ]]; then
  [[ -r "$VETOBENCH_CA_BUNDLE" ]] || die "VETOBENCH_CA_BUNDLE: cannot read $VETOBENCH_CA_BUNDLE"
  curl_tls=(--cacert "$VETOBENCH_CA_BUNDLE")
elif [[ -r "$CA_DEFAULT" ]]; then
  curl_tls=(--cacert "$CA_DEFAULT")
fi

# The key stays in this shell: it reaches curl on stdin (-H @-), never as an argument.
api_key="${VLLM_API_KEY:-}"
if [[ -z "$api_key" ]]; then
  api_key="$(ocn get "secret/$SECRET" -o 'jsonpath={.data.VLLM_API_KEY}' | base64 -d)" \
    || die "cannot read VLLM_API_KEY from secret/$SECRET (or set VLLM_API_KEY)"
fi
[[ -n "$api_key" ]] || die "secret/$SECRET has no VLLM_API_KEY"

list_models() {
  printf 'Authorization: Bearer %s\n' "$api_key" |
    curl -sS --fail --max-time 30 ${curl_tls[@]+"${curl_tls[@]}"} -H @- "$url/models" 2>&1
}

echo "polling $url/models for $NAME"
while :; do
  if body="$(list_models)"; then
    compact="$(tr -d ' \t\r\n' <<<"$body")"
    if [[ "$compact" == *"\"id\":\"$NAME\""* ]]; then
      break
    fi
    last="listed models do not include $NAME yet"
  else
    last="$(tail -n 1 <<<"$body")"
    case "$last" in
      *"error: 401"* | *"error: 403"*)
        die "$url/models rejected the key: $last (VLLM_API_KEY differs from the served one?)" ;;
    esac
  fi
  ((SECONDS < deadline)) || die "timed out after ${TIMEOUT_S}s: $url/models: $last"
  sleep "$POLL_S"
done

echo "$NAME is served at $url"
echo "next: npx vetobench smoke --agents $NAME"
