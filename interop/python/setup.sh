#!/usr/bin/env bash
# Creates interop/python/.venv with the pinned MCP Python SDK (requirements.lock),
# for tests/interop_python.rs. Idempotent: a venv already built from the same lock
# (and still importing `mcp`) is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
lock="$here/requirements.lock"
python="${PYTHON:-python3}"

want="$(sha256sum "$lock" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version.split()[0])')"
stamp="$venv/.smthrs-lock"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] \
    && "$venv/bin/python" -c 'import mcp.server.mcpserver' 2>/dev/null; then
    echo "interop/python/.venv is up to date"
    exit 0
fi

rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-deps --require-hashes --only-binary=:all: -r "$lock"
"$venv/bin/python" -c 'import mcp.server.mcpserver'
echo "$want" > "$stamp"
echo "interop/python/.venv ready ($("$venv/bin/python" -m pip show mcp | grep '^Version'))"
