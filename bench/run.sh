#!/usr/bin/env bash
# Builds gyre and the benchmark in release mode, runs the benchmark and keeps
# the table in bench/out/latest.md. Extra arguments go to gyre-bench
# (e.g. --quick, --only sse,grep). Runnable from any directory. The grep
# benchmark needs ripgrep (`rg`) on PATH.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

cargo build --release -p gyre-cli -p gyre-bench

# Where cargo put them: CARGO_TARGET_DIR when set (relative to the root).
target_dir="${CARGO_TARGET_DIR:-target}"
mkdir -p bench/out
"$target_dir/release/gyre-bench" --gyre "$target_dir/release/gyre" "$@" | tee bench/out/latest.md
