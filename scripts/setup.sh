#!/usr/bin/env bash
# Installs what decodelab needs, idempotently (what is present is skipped). Needs root or sudo for
# Debian's packages. The CUDA Toolkit is not installed here: when /usr/local/cuda/bin/nvcc exists
# the CUDA backend is built as well.
#
# Always, from Debian's packages: the build (CMake, Ninja, a C++ compiler, CLI11, yaml-cpp, Catch2 v2,
# nlohmann-json, OpenMP, OpenBLAS, zlib) and python3.
# DECODELAB_SETUP_EXTRAS adds any of (e.g. "browser slurm"):
#   browser  Debian's chromium, chromium-driver, python3-selenium and a font: the ctest browser tests
#            of the HTML pages (tests/browser/, driven by Debian's /usr/bin/python3)
#   slurm    Debian's slurm-wlm and munge: a one-node Slurm for `sweep/lab --slurm`
#            (scripts/slurm-local.sh; the ctest slurm_cluster)
#   clang    Debian's clang and its fuzzer runtime (scripts/fuzz.sh)
#   qemu     Debian's qemu-user-static: the test binary run on emulated older x86-64 CPUs, to show
#            that the kernel variant it picks there is right (tests/cpu-variants-qemu.sh)
#   aarch64  Debian's crossbuild-essential-arm64, qemu-user-static and the arm64 libraries (the arm64
#            architecture is added to dpkg; yaml-cpp's arm64 development files are unpacked into
#            .cross/arm64, since its package cannot sit beside the native one): scripts/aarch64-test.sh
#   cuda12   Debian's python3-venv, for scripts/cuda12-build.sh (CUDA 12.x's headers and libraries
#            from PyPI's NVIDIA wheels, pinned in requirements/cuda12.txt, into .venv-cu12/)
#   torch    a virtual environment .venv/ made with Debian's python3-venv, holding the PyPI packages
#            pinned in requirements/torch.txt (torch 2.x — a CUDA build of several GB —, transformers,
#            HolisticTraceAnalysis): the PyTorch programs in examples/pytorch/ that record the traces
#            of tests/data/. Only this extra installs torch; nothing is pip-installed outside .venv/.
# Any install that fails makes this script fail: a missing extra is never turned into skipped tests.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="${DECODELAB_SETUP_EXTRAS:-}"
extras="${extras//,/ }"
for extra in $extras; do
  case "$extra" in
    browser|slurm|qemu|clang|torch|aarch64|cuda12) ;;
    *) echo "setup: unknown extra '$extra' in DECODELAB_SETUP_EXTRAS (expected any of: browser slurm qemu clang torch aarch64 cuda12)" >&2; exit 2 ;;
  esac
done
wants() { [[ " $extras " == *" $1 "* ]]; }

packages=(build-essential cmake ninja-build pkg-config libcli11-dev libyaml-cpp-dev catch2 nlohmann-json3-dev
          libomp-dev libopenblas-dev zlib1g-dev python3)
if wants browser; then packages+=(chromium chromium-driver python3-selenium fonts-dejavu-core); fi
if wants clang; then packages+=(clang libclang-rt-14-dev); fi
if wants slurm; then packages+=(slurm-wlm munge); fi
if wants qemu; then packages+=(qemu-user-static); fi
if wants torch || wants cuda12; then packages+=(python3-venv); fi
if wants aarch64; then
  packages+=(crossbuild-essential-arm64 qemu-user-static file zlib1g-dev:arm64 libyaml-cpp0.7:arm64 libgomp1:arm64)
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    [[ $(id -u) -eq 0 ]] || { echo "setup: the aarch64 extra needs root (dpkg --add-architecture arm64)" >&2; exit 1; }
    dpkg --add-architecture arm64
    apt-get update -qq
  fi
fi

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

if wants browser; then
  # The three pieces must fit together: chromedriver speaks to the chromium of the same version.
  browser_version="$(chromium --version | grep -oE '[0-9]+\.[0-9.]+')"
  driver_version="$(chromedriver --version | grep -oE '[0-9]+\.[0-9.]+' | head -1)"
  [[ "$browser_version" == "$driver_version" ]] ||
    { echo "setup: chromium $browser_version and chromedriver $driver_version differ" >&2; exit 1; }
  /usr/bin/python3 -c 'import selenium' || { echo "setup: python3-selenium does not import in /usr/bin/python3" >&2; exit 1; }
  echo "setup: browser tests ready (chromium $browser_version, chromedriver, python3-selenium)"
fi

if wants aarch64; then
  root=.cross/arm64
  if [[ ! -f "$root/usr/lib/aarch64-linux-gnu/cmake/yaml-cpp/yaml-cpp-config.cmake" ]]; then
    mkdir -p .cross
    (cd .cross && apt-get download libyaml-cpp-dev:arm64)
    dpkg -x .cross/libyaml-cpp-dev_*_arm64.deb "$root"
    # The package's CMake files name the shared library that libyaml-cpp0.7:arm64 installed.
    ln -sf /usr/lib/aarch64-linux-gnu/libyaml-cpp.so.0.7.0 "$root/usr/lib/aarch64-linux-gnu/"
  fi
  echo "setup: aarch64 cross build ready (scripts/aarch64-test.sh)"
fi

if wants torch; then
  # Debian's python3 is externally managed: PyPI's packages go into the project's own .venv/.
  requirements=requirements/torch.txt
  stamp=.venv/.installed-$(sha256sum "$requirements" | cut -c1-16)
  if [[ -f "$stamp" ]]; then
    echo "setup: .venv already holds $requirements"
  else
    [[ -x .venv/bin/python ]] || /usr/bin/python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
    rm -f .venv/.installed-*
    touch "$stamp"
    echo "setup: .venv holds $requirements"
  fi
fi
