#!/usr/bin/env bash
# Runs the real-server interop tests (six peers, seven server modes: server-everything,
# the Python SDK 2.3.0 and 1.30.0, rmcp 3.11 dual-era and legacy-only, the TypeScript
# SDK's server 2.4.0, each over stdio and Streamable HTTP; server-github 2025.4.8, a
# 2024-11-05 server, over stdio only), prints one summary line, and
# regenerates the table between the `servers:begin`/`servers:end` markers in the
# top-level README: per pair, the tests' result, the revision the library's default
# mode negotiated (from client.protocol_version()) and the connect time.
#
#   bash interop/servers/run.sh
#
# Peers must be installed first (.ci/run does it): `(cd interop && npm ci)` and
# `bash interop/python/setup.sh`; the rmcp server is an example, built here.
# CI=true makes a missing peer a failure instead of a skip. Ignored tests are
# counted as waiting, not run.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
log="$work/test.log"
report="$work/report.tsv"
: >"$report"
# The rmcp peer is an example: `cargo test --test ...` alone would not (re)build it.
cargo build --quiet --example rmcp_server
set +e
SMTHRS_INTEROP_REPORT="$report" CI=true cargo test \
  --test interop_everything --test interop_python --test interop_python_legacy \
  --test interop_rmcp --test interop_typescript --test interop_github \
  -- --test-threads=2 >"$log" 2>&1
status=$?
set -e

set +e
python3 - "$log" "$report" "$repo/README.md" >"$work/summary" <<'PY'
import re, sys
from collections import OrderedDict

log_path, report_path, readme_path = sys.argv[1:4]
# key: (display name, target era, transports it serves)
BOTH = ("stdio", "http")
PEERS = OrderedDict([
    ("everything", ("server-everything 2026.8.31 (npm)", "legacy", BOTH)),
    ("python", ("Python SDK `mcp` 2.3.0 (PyPI)", "modern", BOTH)),
    ("python-legacy", ("Python SDK `mcp` 1.30.0 (PyPI, second venv)", "legacy", BOTH)),
    ("rmcp", ("rmcp 3.11 (crates.io), dual-era", "modern", BOTH)),
    ("rmcp-legacy", ("rmcp 3.11, `--legacy-only`", "legacy", BOTH)),
    ("typescript", ("TypeScript SDK `@modelcontextprotocol/server` 2.4.0 (npm)", "modern", BOTH)),
    ("github", ("server-github 2025.4.8 (npm, TypeScript SDK 1.0.1; answers 2024-11-05)", "legacy", ("stdio",))),
])
BINARIES = {
    "interop_everything": "everything",
    "interop_python": "python",
    "interop_python_legacy": "python-legacy",
    "interop_rmcp": "rmcp",
    "interop_typescript": "typescript",
    "interop_github": "github",
}
TRANSPORTS = [("stdio", "stdio_"), ("http", "http_")]

state = {}  # (peer, transport) -> {"ok": n, "fail": n, "waiting": n}
binary = None
for line in open(log_path, encoding="utf-8", errors="replace"):
    m = re.search(r"Running tests/(interop_[a-z_]+)\.rs", line)
    if m:
        binary = BINARIES.get(m.group(1))
        continue
    m = re.match(r"^test (\S+) \.\.\. (\S+)", line)
    if not m or binary is None:
        continue
    name, result = m.group(1), m.group(2).rstrip(",")
    transport = next((t for t, prefix in TRANSPORTS if name.startswith(prefix)), None)
    if transport is None:
        continue
    peer = "rmcp-legacy" if binary == "rmcp" and "legacy_only" in name else binary
    cell = state.setdefault((peer, transport), {"ok": 0, "fail": 0, "waiting": 0})
    if result == "ok":
        cell["ok"] += 1
    elif result == "ignored":
        cell["waiting"] += 1
    else:
        cell["fail"] += 1

eras = {}
for line in open(report_path, encoding="utf-8"):
    parts = line.rstrip("\n").split("\t")
    if len(parts) == 5:
        peer, transport, version, target, connect_ms = parts
        eras[(peer, transport)] = (version, float(connect_ms))

rows, green, failed, missing, waiting = [], 0, 0, 0, 0
modern_now = legacy_now = target_modern = 0
for key, (name, target, serves) in PEERS.items():
    cells = []
    for transport, _ in TRANSPORTS:
        if transport not in serves:
            cells.append("— (not served)")
            continue
        cell = state.get((key, transport))
        era = eras.get((key, transport))
        if target == "modern":
            target_modern += 1
        if cell is None or cell["ok"] + cell["fail"] == 0:
            missing += 1
            cells.append("not run")
            continue
        waiting += cell["waiting"]
        if cell["fail"] or era is None:
            failed += 1
            result = f"FAIL ({cell['fail']} of {cell['ok'] + cell['fail']} tests)"
        else:
            green += 1
            result = f"pass ({cell['ok']} tests)"
        if cell["waiting"]:
            result += f", {cell['waiting']} waiting"
        if era is None:
            cells.append(result + " · era not reported")
            continue
        version, connect_ms = era
        label = "modern" if version >= "2026-07-28" else "legacy"
        if label == "modern":
            modern_now += 1
        else:
            legacy_now += 1
        cells.append(f"{result} · **{label}** {version} · {connect_ms:.0f} ms")
    rows.append(f"| {name} | {target} | {cells[0]} | {cells[1]} |")

pairs = sum(len(serves) for _, _, serves in PEERS.values())
summary = (
    f"servers: {green} of {pairs} (server, transport) pairs green, {failed} failed, "
    f"{missing} not run; negotiated {modern_now} modern, {legacy_now} legacy "
    f"(target {target_modern} modern)"
    + (f"; {waiting} tests ignored" if waiting else "")
)
block = "\n".join([
    "<!-- servers:begin (generated by interop/servers/run.sh) -->",
    "| server | target era | stdio | Streamable HTTP |",
    "| --- | --- | --- | --- |",
    *rows,
    "",
    f"`{summary}`",
    "<!-- servers:end -->",
])
text = open(readme_path, encoding="utf-8").read()
pattern = re.compile(r"<!-- servers:begin.*?<!-- servers:end -->", re.S)
if pattern.search(text):
    new = pattern.sub(lambda _: block, text)
    if new != text:
        open(readme_path, "w", encoding="utf-8").write(new)
print(summary)
sys.exit(0 if green == pairs else 1)
PY
table_status=$?
set -e

cat "$work/summary"
if [ "$status" -ne 0 ] || [ "$table_status" -ne 0 ]; then
  sed -n '1,300p' "$log" >&2
  exit 1
fi
