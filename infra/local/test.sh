#!/usr/bin/env bash
# Sets up what the tests need (Python venv with moto, cfn-lint, aws-sam-cli,
# cargo-lambda; moto_server on a free port) and runs every test: the
# template checks, then the whole workspace (unit, moto integration,
# end-to-end, conformance).
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"

log "checking infra/template.yaml (cfn-lint, sam validate --lint)"
cfn-lint infra/template.yaml
sam validate --lint --template-file infra/template.yaml --region "$AWS_REGION" >/dev/null

log "running the workspace tests"
cargo test --workspace --no-fail-fast "$@"
