#!/usr/bin/env bash
# Coverage-guided fuzzing of ringrt's input parsers with libFuzzer (clang): builds the fuzz targets of
# the `fuzz` preset (clang, ASan + UBSan) and runs each for SECONDS (default 60) on a working corpus
# seeded from test/fuzz/corpus/<name>/ (and configs/ for the config loader).
#   scripts/fuzz.sh [SECONDS] [TARGET...]        e.g. scripts/fuzz.sh 600 fuzz_config
# A crash, an exception that is not a user error, a hang over 5 s or more than 2 GiB stops a target and
# leaves its input in build/fuzz/findings/. Once fixed, add the input to test/fuzz/corpus/<name>/: the
# CTest replay (label fuzz) runs it on every build.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(fuzz_config fuzz_set); fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j2 --target "${targets[@]}"
mkdir -p build/fuzz/findings
for t in "${targets[@]}"; do
  name="${t#fuzz_}"
  work="build/fuzz/corpus-$name"
  mkdir -p "$work"
  seeds=("test/fuzz/corpus/$name")
  if [ "$name" = config ]; then seeds+=(configs); fi
  echo "== $t: ${seconds} s"
  # the first folder collects new inputs; the others are read-only seeds
  "build/fuzz/test/fuzz/$t" "$work" "${seeds[@]}" -max_total_time="$seconds" -max_len=65536 -timeout=5 \
    -rss_limit_mb=2048 -artifact_prefix=build/fuzz/findings/ -print_final_stats=1
done
