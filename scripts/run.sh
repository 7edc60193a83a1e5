#!/usr/bin/env bash
# The main job: install missing packages, build the `ringrt` program with the release preset, and run
# an experiment (default: configs/default.yaml, the 1 KiB .. 64 MiB allreduce sweep on 4 CPU devices).
#   scripts/run.sh [CONFIG.yaml] [ringrt run options: --set key=value, --csv FILE, --json FILE]
# Exit status: ringrt's (0 ok, 1 wrong results, 2 bad input).
set -euo pipefail
cd "$(dirname "$0")/.."
config="${1:-configs/default.yaml}"
(($# > 0)) && shift

bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j2 --target ringrt_cli
exec build/release/ringrt run "$config" "$@"
