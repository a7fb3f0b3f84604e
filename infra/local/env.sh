# Sourced by run.sh and test.sh: installs what is missing (idempotent),
# starts moto_server on a free port and exports the local environment.
# Everything lands under $INSTANCE_AI_HOME (default ~/.cache/instance-ai),
# so a second run, or CI on the same machine, reuses it.

set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export INSTANCE_AI_HOME="${INSTANCE_AI_HOME:-$HOME/.cache/instance-ai}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$INSTANCE_AI_HOME/target}"
VENV="$INSTANCE_AI_HOME/venv"
mkdir -p "$INSTANCE_AI_HOME"

log() { printf '\033[1m[instance-ai]\033[0m %s\n' "$*" >&2; }

if ! command -v cargo >/dev/null 2>&1; then
  log "cargo is missing: install Rust (https://rustup.rs) first"; exit 1
fi

# Python tools, pinned in requirements.txt; reinstalled when the pins change.
REQS="$REPO_ROOT/infra/local/requirements.txt"
STAMP="$VENV/.requirements.sha256"
want="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  log "installing moto, cfn-lint, aws-sam-cli, cargo-lambda, mcp and playwright into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --upgrade pip
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQS"
  echo "$want" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"

# AWS SDK settings: every client talks to moto; moto takes any credentials.
export AWS_REGION="${AWS_REGION:-us-east-1}"
export AWS_DEFAULT_REGION="$AWS_REGION"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-testing}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-testing}"
export SAM_CLI_TELEMETRY=0

# The MCP end-to-end tests drive the server with the official Python SDK
# client; the web page's tests drive Debian's chromium with Playwright.
export INSTANCE_AI_PYTHON="$VENV/bin/python"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing Debian's chromium for the browser tests"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    log "chromium is missing: install Debian's chromium (apt-get install chromium) for the web page's browser tests"
  fi
fi
export INSTANCE_AI_CHROMIUM="${INSTANCE_AI_CHROMIUM:-$(command -v chromium || echo /usr/bin/chromium)}"

# moto_server on a free port, stopped when the calling script exits. With
# MOTO_STATE_FILE (run.sh sets it) its data is restored from and saved to
# that file; without it (the tests) it lives in memory only.
MOTO_PORT="${MOTO_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
MOTO_ARGS=(-H 127.0.0.1 -p "$MOTO_PORT")
if [ -n "${MOTO_STATE_FILE:-}" ]; then
  MOTO_ARGS+=(--state "$MOTO_STATE_FILE" --save-interval-ms "${INSTANCE_AI_STATE_SAVE_MS:-1000}")
fi
"$VENV/bin/python" "$REPO_ROOT/infra/local/moto_server.py" "${MOTO_ARGS[@]}" >"$INSTANCE_AI_HOME/moto.log" 2>&1 &
MOTO_PID=$!
# Whatever the scripts start is stopped when they end, however they end.
CLEANUP_PIDS=("$MOTO_PID")
# Temp dirs of what they started (databases.sh), removed after.
CLEANUP_DIRS=()
# Newest first, each waited for: the stack stops writing before moto makes
# its final save, and that save is on disk before the script returns.
cleanup() {
  local i
  for ((i = ${#CLEANUP_PIDS[@]} - 1; i >= 0; i--)); do
    kill "${CLEANUP_PIDS[i]}" 2>/dev/null || true
    wait "${CLEANUP_PIDS[i]}" 2>/dev/null || true
  done
  rm -rf "${CLEANUP_DIRS[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Restoring a large saved state takes a while before moto listens.
for _ in $(seq 1 600); do
  if curl -fs "http://127.0.0.1:$MOTO_PORT/moto-api/" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$MOTO_PID" 2>/dev/null; then log "moto_server failed to start: see $INSTANCE_AI_HOME/moto.log"; exit 1; fi
  sleep 0.1
done
export AWS_ENDPOINT_URL="http://127.0.0.1:$MOTO_PORT"
log "moto_server on $AWS_ENDPOINT_URL"
