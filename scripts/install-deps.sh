#!/usr/bin/env bash
# Installs the Debian 12 packages ringrt needs. Idempotent and silent when all are present;
# runs `apt-get update` once, only when something is missing. Root, or sudo when available.
set -euo pipefail

packages=(
  cmake g++ ninja-build pkg-config clang-format                     # build tools
  libtbb-dev libyaml-cpp-dev libboost-graph-dev libboost-test-dev   # library dependencies
  libfmt-dev libcli11-dev nlohmann-json3-dev
  libbenchmark-dev librapidcheck-dev                                # optional: benchmarks, property tests
  hipcc libamdhip64-dev                                             # HIP + hipRTC (hip-config.cmake needs hipcc)
  clang-19                                                          # HIP for gfx942 (test/hiprtc/test_stream_kernels.cpp)
  python3-matplotlib                                                # plots
  openmpi-bin libopenmpi-dev                                        # the MPI peer of scripts/bench-peers.sh
)

missing=()
for pkg in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)" != installed ]]; then
    missing+=("$pkg")
  fi
done
((${#missing[@]} == 0)) && exit 0

if ((EUID == 0)); then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: missing ${missing[*]}; run as root or install sudo" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
