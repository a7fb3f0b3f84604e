#!/usr/bin/env bash
# Runs the whole stack on this machine, in the foreground: moto_server for
# DynamoDB and SQS, and the local cloud (HTTP API, SSE, WebSocket API,
# @connections, SQS consumers, schedules). Prints the URL and an API key.
#
#   ./infra/local/run.sh           keep data under $INSTANCE_AI_STATE (restored on start)
#   ./infra/local/run.sh --reset   delete that data first and start empty
RESET=
for arg in "$@"; do
  case "$arg" in
    --reset) RESET=1 ;;
    -h | --help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $arg (try --help)" >&2; exit 2 ;;
  esac
done
export INSTANCE_AI_STATE="${INSTANCE_AI_STATE:-${INSTANCE_AI_HOME:-$HOME/.cache/instance-ai}/state}"
if [ -n "$RESET" ]; then
  rm -rf "$INSTANCE_AI_STATE"
fi
mkdir -p "$INSTANCE_AI_STATE"
chmod 700 "$INSTANCE_AI_STATE"
export MOTO_STATE_FILE="$INSTANCE_AI_STATE/moto.pickle"
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"
[ -n "$RESET" ] && log "--reset: started with no data"
log "data kept in $INSTANCE_AI_STATE (saved within ${INSTANCE_AI_STATE_SAVE_MS:-1000} ms of a change, and on stop)"

# A development data key for credential secrets, kept across runs.
if [ -z "${INSTANCE_AI_LOCAL_DATA_KEY:-}" ]; then
  KEY_FILE="$INSTANCE_AI_HOME/local-data-key"
  [ -s "$KEY_FILE" ] || python3 -c 'import os,base64; print(base64.b64encode(os.urandom(32)).decode())' > "$KEY_FILE"
  export INSTANCE_AI_LOCAL_DATA_KEY="$(cat "$KEY_FILE")"
fi
# One API key for the user `local`, the same on every run (kept with the data).
if [ -z "${INSTANCE_AI_BOOTSTRAP_KEYS:-}" ]; then
  API_KEY_FILE="$INSTANCE_AI_STATE/local-api-key"
  [ -s "$API_KEY_FILE" ] || (umask 077; python3 -c 'import os; print("ia_" + os.urandom(32).hex())' > "$API_KEY_FILE")
  export INSTANCE_AI_BOOTSTRAP_KEYS="local:$(cat "$API_KEY_FILE")"
fi
export INSTANCE_AI_LOG_FORMAT="${INSTANCE_AI_LOG_FORMAT:-text}"

log "building the local cloud"
cargo build --quiet -p local-cloud
"$CARGO_TARGET_DIR/debug/local-cloud" serve &
CLEANUP_PIDS+=("$!")
wait "$!"
