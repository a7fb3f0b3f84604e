#!/usr/bin/env bash
# Cold start per function, the way AWS defines Init Duration: each release
# binary is started against a stand-in Lambda Runtime API (../shared/tools/
# init_duration.py) with the environment the template gives it, pointed at a
# local moto; prints init p50, first-invoke p50 and binary size per function,
# after the same figures for a plain lambda_http hello (built here with this
# workspace's release profile and lock file: the yardstick).
#
#   ./infra/local/measure_init.sh [RELEASE_DIR] [RUNS]
#
# RELEASE_DIR holds the binaries of `cargo build --release -p <function>...`
# (default: $CARGO_TARGET_DIR/release). The first invoke of each uses the
# sample event in events/<function>.json; its time includes moto's answers.
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"
RELEASE_DIR="${1:-$CARGO_TARGET_DIR/release}"
RUNS="${2:-10}"
TOOL="$REPO_ROOT/../shared/tools/init_duration.py"
[ -f "$TOOL" ] || { log "missing $TOOL"; exit 1; }

# The yardstick: `lambda_http::run` answering "hello", nothing else.
HELLO="$CARGO_TARGET_DIR/lambda-hello"
mkdir -p "$HELLO/src"
{
  printf '[package]\nname = "lambda-hello"\nversion = "0.1.0"\nedition = "2021"\npublish = false\n\n'
  printf '[dependencies]\nlambda_http = { version = "1.0", default-features = false, features = ["apigw_http"] }\n'
  printf 'tokio = { version = "1", features = ["macros", "rt-multi-thread"] }\n\n[workspace]\n\n'
  # The workspace's release profile, verbatim.
  awk '/^\[profile\.release\]/{p=1; print; next} /^\[/{p=0} p' Cargo.toml
} > "$HELLO/Cargo.toml"
cat > "$HELLO/src/main.rs" <<'RS'
use lambda_http::{run, service_fn, Body, Error, Request, Response};

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(|_: Request| async { Ok::<_, Error>(Response::new(Body::from("hello"))) })).await
}
RS
cp Cargo.lock "$HELLO/Cargo.lock"
cargo build --quiet --release --manifest-path "$HELLO/Cargo.toml"
printf '%-9s ' "hello"
python3 "$TOOL" "$CARGO_TARGET_DIR/release/lambda-hello" events/health.json "$RUNS" 2>&1 | tail -1

cargo build --quiet -p local-cloud
mapfile -t ENV_VARS < <("$CARGO_TARGET_DIR/debug/local-cloud" env)
ENV_VARS+=("WS_MANAGEMENT_URL=http://127.0.0.1:9" "WS_API_URL=ws://127.0.0.1:9/ws" "SWEEP_SCHEDULE=ia-sweep"
  "SCHEDULER_GROUP=ia-workflows" "SCHEDULER_ROLE_ARN=arn:aws:iam::123456789012:role/ia-scheduler" "RUNS_QUEUE_ARN=arn:aws:sqs:us-east-1:123456789012:ia-runs"
  "INSTANCE_AI_MODEL=bedrock:anthropic.claude-sonnet-4-5"
  "INSTANCE_AI_LOCAL_DATA_KEY=$(python3 -c 'import os,base64; print(base64.b64encode(os.urandom(32)).decode())')"
  "AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL")

for event in events/*.json; do
  fn="$(basename "$event" .json)"
  bin="$RELEASE_DIR/$fn"
  if [ ! -x "$bin" ]; then log "$fn: no binary at $bin (build it with cargo build --release -p $fn)"; continue; fi
  printf '%-9s ' "$fn"
  # A streamed response (events: SSE) has no end for the tool to time; its
  # init is still measured, the first invoke is not.
  python3 "$TOOL" "$bin" "$event" "$RUNS" "${ENV_VARS[@]}" 2>&1 | tail -1 || true
done
