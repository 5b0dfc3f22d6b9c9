#!/usr/bin/env bash
# Runs fuzz targets one at a time: `fuzz/run.sh SECONDS [TARGET...]` (default: all).
#
# New corpus entries go to fuzz/corpus-work/<target> (ignored by git); the committed
# seeds in fuzz/corpus/<target> are read, never written. Crashes land in
# fuzz/artifacts/<target>/ (ignored); minimise one with
# `cargo +nightly fuzz tmin -O <target> <file>` and commit it under
# fuzz/artifacts-found/<target>/.
#
# The 10-minute runs in fuzz/RUNS.md: `fuzz/run.sh 600`. A CI smoke: `fuzz/run.sh 30`.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(line_framer jsonrpc_classify catalog_page http_sse server_file redaction www_authenticate input_requests skill_frontmatter resource_contents change_notification token_exchange)
fi
cargo +nightly fuzz build -O
status=0
for t in "${targets[@]}"; do
  case $t in
    jsonrpc_classify | catalog_page | server_file | www_authenticate | input_requests | change_notification | token_exchange) dict=(-dict=fuzz/dict/json.dict) ;;
    http_sse) dict=(-dict=fuzz/dict/sse.dict) ;;
    redaction) dict=(-dict=fuzz/dict/redaction.dict) ;;
    skill_frontmatter) dict=(-dict=fuzz/dict/yaml.dict) ;;
    resource_contents) dict=(-dict=fuzz/dict/resources.dict) ;;
    *) dict=() ;;
  esac
  mkdir -p "fuzz/corpus-work/$t" "fuzz/artifacts/$t"
  echo "== $t (${seconds}s)"
  log="fuzz/corpus-work/$t.log"
  rc=0
  cargo +nightly fuzz run -O "$t" "fuzz/corpus-work/$t" "fuzz/corpus/$t" -- \
    "${dict[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="fuzz/artifacts/$t/" >"$log" 2>&1 || rc=$?
  grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|SUMMARY|panicked" "$log" || true
  if [ "$rc" -ne 0 ] || ls "fuzz/artifacts/$t"/* >/dev/null 2>&1; then
    echo "!! $t found something (exit $rc): fuzz/artifacts/$t/, log $log" >&2
    status=1
  fi
done
exit $status
