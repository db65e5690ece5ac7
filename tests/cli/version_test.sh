#!/usr/bin/env bash
# Every binary answers --version with its name and the project's version,
# exit 0, without starting anything.
set -euo pipefail
version=${PACER_VERSION:?}
for bin in "$@"; do
  out=$("$bin" --version) || { echo "FAIL: $bin --version exited $?" >&2; exit 1; }
  name=$(basename "$bin")
  [ "$out" = "$name $version" ] || { echo "FAIL: $bin --version printed '$out', expected '$name $version'" >&2; exit 1; }
done
echo "ok: $# binaries"
