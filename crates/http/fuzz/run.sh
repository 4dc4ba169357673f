#!/usr/bin/env bash
# Build and run the HTTP body fuzz target with libFuzzer on the stable
# toolchain (the flags cargo-fuzz would pass with --sanitizer none; the
# explicit --target keeps them off build scripts). Usage: run.sh [RUNS]
# Bounds checked by libFuzzer: no single allocation over 64 MiB
# (-malloc_limit_mb), no more than 1 GiB resident (-rss_limit_mb), no input
# taking over 10 s (-timeout); inputs up to 64 KiB.
set -euo pipefail
cd "$(dirname "$0")"
RUNS="${1:-10000000}"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
cargo build --release --target x86_64-unknown-linux-gnu --bin bodies
mkdir -p corpus/bodies artifacts
exec ./target/x86_64-unknown-linux-gnu/release/bodies corpus/bodies seeds \
  -artifact_prefix=artifacts/ -runs="$RUNS" -max_len=65536 -malloc_limit_mb=64 -rss_limit_mb=1024 \
  -timeout=10 -print_final_stats=1
