#!/usr/bin/env bash
# Runs the whole stack on this machine, in the foreground: moto_server for
# DynamoDB and SQS, and the local cloud (HTTP API, SSE, WebSocket API,
# @connections, SQS consumers, schedules). Prints the URL and an API key.
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"

# A development data key for credential secrets, kept across runs.
if [ -z "${INSTANCE_AI_LOCAL_DATA_KEY:-}" ]; then
  KEY_FILE="$INSTANCE_AI_HOME/local-data-key"
  [ -s "$KEY_FILE" ] || python3 -c 'import os,base64; print(base64.b64encode(os.urandom(32)).decode())' > "$KEY_FILE"
  export INSTANCE_AI_LOCAL_DATA_KEY="$(cat "$KEY_FILE")"
fi
export INSTANCE_AI_LOG_FORMAT="${INSTANCE_AI_LOG_FORMAT:-text}"

log "building the local cloud"
cargo build --quiet -p local-cloud
"$CARGO_TARGET_DIR/debug/local-cloud" serve &
CLEANUP_PIDS+=("$!")
wait "$!"
