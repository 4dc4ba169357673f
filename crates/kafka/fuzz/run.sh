#!/usr/bin/env bash
# Build and run the Kafka request fuzz target with libFuzzer on the stable
# toolchain (the flags cargo-fuzz would pass with --sanitizer none; the
# explicit --target keeps them off build scripts). Usage: run.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")"
RUNS="${1:-10000000}"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
cargo build --release --target x86_64-unknown-linux-gnu --bin request
mkdir -p corpus/request artifacts
exec ./target/x86_64-unknown-linux-gnu/release/request corpus/request \
  -artifact_prefix=artifacts/ -runs="$RUNS" -max_len=4096 -print_final_stats=1
