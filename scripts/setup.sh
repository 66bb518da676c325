#!/usr/bin/env bash
# Installs decodelab's build dependencies from Debian's packages (idempotent: packages
# already present are skipped). Needs root or sudo. The CUDA Toolkit is not installed
# here: when /usr/local/cuda/bin/nvcc exists the CUDA backend is built as well.
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config libcli11-dev libyaml-cpp-dev catch2 nlohmann-json3-dev
          libomp-dev libopenblas-dev python3)
if [[ "${DECODELAB_SETUP_EXTRAS:-}" == *chromium* ]]; then packages+=(chromium); fi
if [[ "${DECODELAB_SETUP_EXTRAS:-}" == *clang* ]]; then packages+=(clang libclang-rt-14-dev); fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
