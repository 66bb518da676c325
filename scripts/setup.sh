#!/usr/bin/env bash
# Installs decodelab's build dependencies from Debian's packages (idempotent: packages
# already present are skipped). Needs root or sudo. The CUDA Toolkit is not installed
# here: when /usr/local/cuda/bin/nvcc exists the CUDA backend is built as well.
# DECODELAB_SETUP_EXTRAS adds optional packages (any of them, e.g. "clang slurm"): chromium (report
# screenshots), clang (fuzzing), torch (python3-torch, large: the PyTorch example in examples/pytorch/
# and the script that regenerates the PyTorch traces in tests/data/torch/), slurm.
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config libcli11-dev libyaml-cpp-dev catch2 nlohmann-json3-dev
          libomp-dev libopenblas-dev zlib1g-dev python3)
if [[ "${DECODELAB_SETUP_EXTRAS:-}" == *chromium* ]]; then packages+=(chromium); fi
if [[ "${DECODELAB_SETUP_EXTRAS:-}" == *clang* ]]; then packages+=(clang libclang-rt-14-dev); fi
if [[ "${DECODELAB_SETUP_EXTRAS:-}" == *torch* ]]; then packages+=(python3-torch); fi
# slurm: a one-node Slurm for `sweep/lab --slurm` (scripts/slurm-local.sh; the ctest slurm_cluster).
if [[ "${DECODELAB_SETUP_EXTRAS:-}" == *slurm* ]]; then packages+=(slurm-wlm munge); fi

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
