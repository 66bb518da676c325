#!/usr/bin/env bash
# Installs decodelab's build dependencies from Debian's packages (idempotent: packages
# already present are skipped). Needs root or sudo. The CUDA Toolkit is not installed
# here: when /usr/local/cuda/bin/nvcc exists the CUDA backend is built as well.
# DECODELAB_SETUP_EXTRAS adds optional packages (any of them, e.g. "clang slurm"): browser (Debian's
# chromium, a font, node and npm, then `npm ci` for puppeteer-core as package-lock.json pins it: the
# ctest browser tests of the HTML pages), clang (fuzzing), torch (python3-torch, large: the PyTorch
# example in examples/pytorch/ and the script that regenerates the PyTorch traces in
# tests/data/torch/), slurm.
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config libcli11-dev libyaml-cpp-dev catch2 nlohmann-json3-dev
          libomp-dev libopenblas-dev zlib1g-dev python3)
browser=false
if [[ "${DECODELAB_SETUP_EXTRAS:-}" == *browser* || "${DECODELAB_SETUP_EXTRAS:-}" == *chromium* ]]; then
  browser=true
  packages+=(chromium fonts-dejavu-core)
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
fi
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
else
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# puppeteer-core for the browser tests, exactly as package-lock.json pins it (into ./node_modules).
if [[ "$browser" == true ]]; then
  cd "$(dirname "$0")/.."
  echo "setup: npm ci (puppeteer-core for tests/browser/)"
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
fi
