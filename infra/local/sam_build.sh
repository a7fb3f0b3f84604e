#!/usr/bin/env bash
# `sam build` of infra/template.yaml, as a deploy runs it, on this machine
# and offline once the toolchain is in place: cargo-lambda (PyPI) with zig
# (PyPI's ziglang) cross-compiles each function for provided.al2023 on
# arm64. Then checks that every function of the template has its
# `bootstrap`, an aarch64 ELF executable, and prints their sizes.
#
#   ./infra/local/sam_build.sh [--debug] [BUILD_DIR]
#
# --debug builds without --release (SAM_BUILD_MODE=debug): no LTO, what CI
# runs to prove the build path in its time limit. Without it the binaries
# are the release ones `sam deploy` uploads. BUILD_DIR defaults to
# $INSTANCE_AI_HOME/sam-build.
MODE=release
if [ "${1:-}" = --debug ]; then MODE=debug; shift; fi
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"
BUILD_DIR="${1:-$INSTANCE_AI_HOME/sam-build}"

# The Rust standard library for the target: the one download (rustup's own
# client) this needs beyond the venv; a no-op once installed.
if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  log "adding the aarch64-unknown-linux-gnu target (rustup)"
  rustup target add aarch64-unknown-linux-gnu
fi

log "sam build ($MODE, arm64, provided.al2023) into $BUILD_DIR"
started=$SECONDS
[ "$MODE" = debug ] && export SAM_BUILD_MODE=debug
sam build --beta-features --template-file infra/template.yaml --build-dir "$BUILD_DIR" >"$INSTANCE_AI_HOME/sam-build.log" 2>&1 \
  || { tail -40 "$INSTANCE_AI_HOME/sam-build.log"; log "sam build failed: see $INSTANCE_AI_HOME/sam-build.log"; exit 1; }
log "sam build took $((SECONDS - started)) s"

# One bootstrap per AWS::Serverless::Function, each an aarch64 executable.
python3 - "$BUILD_DIR" infra/template.yaml <<'PY'
import os, re, struct, sys
build, template = sys.argv[1], sys.argv[2]
functions = re.findall(r"^  (\w+):\n    Type: AWS::Serverless::Function$", open(template).read(), re.M)
bad = []
for fn in functions:
    path = os.path.join(build, fn, "bootstrap")
    if not os.path.isfile(path):
        bad.append(f"{fn}: no bootstrap")
        continue
    with open(path, "rb") as f:
        head = f.read(20)
    # ELF magic, 64-bit, little-endian, ET_EXEC or ET_DYN, e_machine 183 (EM_AARCH64)
    kind, machine = struct.unpack_from("<HH", head, 16)
    if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1 or kind not in (2, 3) or machine != 183:
        bad.append(f"{fn}: not an aarch64 ELF executable")
    elif not os.access(path, os.X_OK):
        bad.append(f"{fn}: bootstrap is not executable")
    else:
        print(f"  {fn:<22} {os.path.getsize(path) / 1e6:6.1f} MB  aarch64 ELF")
if bad or not functions:
    sys.exit("sam build check failed: " + ("; ".join(bad) or "no functions in the template"))
print(f"sam build: {len(functions)} functions, {len(functions)} aarch64 bootstraps")
PY
