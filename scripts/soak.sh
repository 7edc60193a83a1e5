#!/usr/bin/env bash
# The soak: build the release preset's ringrt_soak and run 1,000,000 steps of the fresh-data loop and
# of the persistent-bucket DDP loop on 4 cpu devices (scripts/soak/soak.cpp says what each prints and
# checks), failing when resident memory grows more than 8 MiB after warm-up.
#   scripts/soak.sh [ringrt_soak options, e.g. --steps 100000; given options replace the defaults below]
# Exit status: 0 ok, 1 a check failed, 2 bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j2 --target ringrt_soak
exec build/release/ringrt_soak --steps 1000000 --report-every 100000 --max-rss-growth-mib 8 "$@"
