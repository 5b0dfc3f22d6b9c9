#!/usr/bin/env bash
# Compares the crate's public API with the committed listing (api/public-api.txt):
#
#   bash api/check.sh            # fails, with the diff, when they differ
#   bash api/check.sh --update   # rewrites the listing (commit it with the change)
#
# The listing comes from rustdoc's JSON output (`--output-format json`, unstable,
# enabled on the stable toolchain with RUSTC_BOOTSTRAP=1 for this one command) and
# api/listing.py. Its format follows the toolchain's rustdoc: regenerate it with
# --update when the toolchain changes.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
RUSTC_BOOTSTRAP=1 cargo rustdoc --lib --quiet -- -Z unstable-options --output-format json
fresh="$(mktemp)"
trap 'rm -f "$fresh"' EXIT
python3 api/listing.py target/doc/smthrs_mcp.json >"$fresh"
if [ "${1:-}" = "--update" ]; then
  cp "$fresh" api/public-api.txt
  echo "api: listing updated ($(wc -l <api/public-api.txt) items)"
  exit 0
fi
if ! diff -u api/public-api.txt "$fresh"; then
  echo "api: the public API differs from api/public-api.txt (above: - committed, + now)." >&2
  echo "api: if the change is deliberate, run 'bash api/check.sh --update' and commit the listing." >&2
  exit 1
fi
echo "api: public API unchanged ($(wc -l <api/public-api.txt) items)"
