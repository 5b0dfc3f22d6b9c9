#!/usr/bin/env bash
# Creates the two venvs of the Python interop peers, each from its own hash-pinned lock
# (pip --require-hashes, wheels only, no dependency resolution at install time):
#
#   interop/python/.venv         mcp 2.3.0  (requirements.lock)         server.py         dual-era
#   interop/python/.venv-legacy  mcp 1.30.0 (requirements-legacy.lock)  server_legacy.py  legacy only
#
# for tests/interop_python.rs and tests/interop_python_legacy.rs. Idempotent: a venv
# already built from the same lock and interpreter (and still importing its server
# module) is left alone. The two are built in parallel.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
py_version="$("$python" -c 'import sys; print(sys.version.split()[0])')"

# build VENV_DIR LOCK MODULE
build() {
    local venv="$here/$1" lock="$here/$2" module="$3"
    local want stamp
    want="$(sha256sum "$lock" | cut -d' ' -f1) $py_version"
    stamp="$venv/.smthrs-lock"
    if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] \
        && "$venv/bin/python" -c "import $module" 2>/dev/null; then
        echo "interop/python/$1 is up to date"
        return 0
    fi
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-deps --require-hashes --only-binary=:all: -r "$lock"
    "$venv/bin/python" -c "import $module"
    echo "$want" > "$stamp"
    echo "interop/python/$1 ready ($("$venv/bin/python" -m pip show mcp | grep '^Version'))"
}

build .venv requirements.lock mcp.server.mcpserver &
modern=$!
build .venv-legacy requirements-legacy.lock mcp.server.fastmcp &
legacy=$!
status=0
wait "$modern" || status=1
wait "$legacy" || status=1
exit "$status"
