#!/usr/bin/env bash
# Sets up what the tests need (Python venv with moto, cfn-lint, aws-sam-cli,
# cargo-lambda; moto_server on a free port; PostgreSQL and MariaDB) and runs every test: the
# template checks, then the whole workspace (unit, moto integration,
# end-to-end, conformance).
source "$(dirname "$0")/env.sh"
# PostgreSQL and MariaDB for the database nodes' tests.
source "$(dirname "$0")/databases.sh"
cd "$REPO_ROOT"

log "checking infra/template.yaml (cfn-lint, sam validate --lint)"
cfn-lint infra/template.yaml
sam validate --lint --template-file infra/template.yaml --region "$AWS_REGION" >/dev/null

log "running the workspace tests"
# Debug builds keep a whole step's or execution's future on the stack (the
# tools, the domain layer, the engine): more than the 2 MiB test and tokio
# worker threads get by default. Release builds (Lambda) are far smaller.
export RUST_MIN_STACK="${RUST_MIN_STACK:-8388608}"
cargo test --workspace --no-fail-fast "$@"

# The conformance suites' pass counts (captured above when they pass).
log "conformance: n8n node fixtures (both rounds) and expression vectors"
cargo test --quiet --workspace --test conformance -- --nocapture 2>&1 | grep -oE '(fixtures|fixtures round 2|expressions): .*'

# The README's other command, as a user runs it: it serves /healthz and
# refuses an unauthenticated request with 401 in the JSON error shape.
log "smoke-testing ./infra/local/run.sh"
# Two free ports chosen together, so run.sh's moto cannot be handed the
# stack's port (each chosen alone, the kernel may give the same one twice).
read -r PORT SMOKE_MOTO_PORT < <(python3 -c 'import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])')
# Its data goes to a directory of its own (the default is the user's).
SMOKE_STATE="$(mktemp -d)"
start_run_sh() {
  INSTANCE_AI_STATE="$SMOKE_STATE" INSTANCE_AI_PORT="$PORT" MOTO_PORT="$SMOKE_MOTO_PORT" \
    ./infra/local/run.sh "$@" >"$INSTANCE_AI_HOME/run-smoke.log" 2>&1 &
  RUN_PID=$!
  CLEANUP_PIDS+=("$RUN_PID")
  for _ in $(seq 1 600); do
    curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
    kill -0 "$RUN_PID" 2>/dev/null || { cat "$INSTANCE_AI_HOME/run-smoke.log"; log "run.sh exited"; exit 1; }
    sleep 0.5
  done
}
start_run_sh --reset
[ "$(curl -s "http://127.0.0.1:$PORT/healthz")" = '{"status":"ok"}' ] || { log "run.sh: /healthz is not ok"; exit 1; }
code="$(curl -s -o "$INSTANCE_AI_HOME/run-smoke.body" -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/instance-ai/chat/t1" -d '{"message":"hi"}')"
[ "$code" = 401 ] && grep -q '"code":"unauthorized"' "$INSTANCE_AI_HOME/run-smoke.body" || { log "run.sh: expected a 401 JSON error, got $code"; exit 1; }
grep -q "API key for local: ia_" "$INSTANCE_AI_HOME/run-smoke.log" || { log "run.sh did not print an API key"; exit 1; }
page="$(curl -fs "http://127.0.0.1:$PORT/" || true)"
grep -q '<script type="module" src="/assets/app\.' <<<"$page" || { log "run.sh: GET / does not serve the web page"; exit 1; }
# Stopped and started again, it prints the same key and that key works.
KEY="$(grep -o 'API key for local: ia_[0-9a-f]*' "$INSTANCE_AI_HOME/run-smoke.log" | head -1 | cut -d' ' -f5)"
kill "$RUN_PID"; wait "$RUN_PID" 2>/dev/null || true
[ -s "$SMOKE_STATE/moto.pickle" ] || { log "run.sh: no saved state in $SMOKE_STATE"; exit 1; }
start_run_sh
grep -q "API key for local: $KEY" "$INSTANCE_AI_HOME/run-smoke.log" || { log "run.sh: another key after a restart"; exit 1; }
code="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/instance-ai/threads")"
[ "$code" = 200 ] || { log "run.sh: the key does not work after a restart ($code)"; exit 1; }
kill "$RUN_PID"; wait "$RUN_PID" 2>/dev/null || true
rm -rf "$SMOKE_STATE"
echo "run.sh smoke: 5 passed, 0 failed"

# The deploy build (sam build for arm64, one aarch64 bootstrap per
# function), in debug mode: INSTANCE_AI_SAM_BUILD=1 turns it on (it adds a
# cold aarch64 build of the workspace; see README "Deploying").
if [ "${INSTANCE_AI_SAM_BUILD:-0}" = 1 ]; then
  log "sam build (debug, arm64)"
  ./infra/local/sam_build.sh --debug
fi
