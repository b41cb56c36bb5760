#!/usr/bin/env bash
# Writes crates/cli/startup.order anew: the functions a headless `gyre run`
# (3 steps against the scripted mock) executes, in address order, which
# crates/cli/build.rs hands to the linker so that they sit together in the
# release binary (fewer resident pages: see its module doc). Run it after
# a dependency upgrade or a large change, then check the RSS rows with
# `bash bench/run.sh --only sessions`.
#
# How: a release build that also writes the linker's map (GYRE_LINK_MAP),
# one run under valgrind's callgrind (every function entered, by address;
# the binary is stripped, so addresses are mapped to input sections through
# the map), then the section names, minus LLVM's per-build `.llvm.N`
# suffixed locals, which would never match a later build.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
command -v valgrind >/dev/null || { echo "startup-order: needs valgrind (apt-get install valgrind)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'kill "${mock_pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
target_dir="${CARGO_TARGET_DIR:-target}"

GYRE_LINK_MAP="$work/gyre.map" cargo build --release -p gyre-cli
gyre="$target_dir/release/gyre"

port=18777
"$gyre" mock-server --port "$port" >"$work/mock.log" 2>&1 &
mock_pid=$!
for _ in $(seq 1 50); do grep -q 'mock-server on' "$work/mock.log" && break; sleep 0.1; done

# The demo writes its sample project (and fixes it with its own mock); the
# profiled run then goes through the same scripted steps headless.
GYRE_HOME="$work/demo-home" "$gyre" demo --dir "$work/project" >/dev/null
mkdir -p "$work/home"
ANTHROPIC_API_KEY=profile GYRE_HOME="$work/home" \
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
  --compress-strings=no --dump-line=no \
  "$gyre" run "fix the average" --provider anthropic \
  --base-url "http://127.0.0.1:$port" --permission-mode bypassPermissions \
  --cwd "$work/project" >/dev/null 2>"$work/valgrind.log"

python3 - "$work/gyre.map" "$work/callgrind.out" crates/cli/startup.order <<'EOF'
import bisect, re, sys

map_path, profile_path, out_path = sys.argv[1:]
sections = []
for line in open(map_path):
    m = re.match(r"\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+.*?:\(\.text\.(.+)\)\s*$", line)
    if m:
        sections.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
sections.sort()
starts = [s[0] for s in sections]
hot = {}
for line in open(profile_path):
    m = re.match(r"c?fn=0x([0-9a-f]+)", line)
    if not m:
        continue
    address = int(m.group(1), 16)
    i = bisect.bisect_right(starts, address) - 1
    if i >= 0 and address < sections[i][0] + sections[i][1]:
        hot[sections[i][0]] = sections[i]
names = [hot[k][2] for k in sorted(hot) if ".llvm." not in hot[k][2]]
with open(out_path, "w") as out:
    out.write("".join(name + "\n" for name in names))
size = sum(s[1] for s in hot.values())
print(f"startup-order: {len(names)} functions ({size / 1e6:.1f} MB of "
      f"{sum(s[1] for s in sections) / 1e6:.1f} MB of code) -> {out_path}", file=sys.stderr)
EOF

cargo build --release -p gyre-cli
