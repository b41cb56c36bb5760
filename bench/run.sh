#!/usr/bin/env bash
# Builds gyre and the benchmark in release mode, runs the benchmark and keeps
# the table in bench/out/latest.md. Extra arguments go to gyre-bench
# (e.g. --quick, --only sse,grep). Runnable from any directory. The grep
# benchmark needs ripgrep (`rg`) on PATH.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

cargo build --release -p gyre-cli -p gyre-bench

mkdir -p bench/out
target/release/gyre-bench --gyre target/release/gyre "$@" | tee bench/out/latest.md
