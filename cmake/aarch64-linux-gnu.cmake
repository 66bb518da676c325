# Cross-compiling decodelab's CPU build for 64-bit Arm (Graviton, Grace) with Debian's
# crossbuild-essential-arm64; the tests then run under qemu-aarch64-static (scripts/aarch64-test.sh).
# Libraries come from Debian's arm64 packages (multiarch, /usr/lib/aarch64-linux-gnu); yaml-cpp's
# development files are unpacked beside the build (their package cannot be installed next to the
# native one), and DECODELAB_ARM64_ROOT names that folder.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# The emulated program loads the arm64 runtime installed with the libraries (libc6:arm64 under
# /lib/aarch64-linux-gnu, its dynamic loader /lib/ld-linux-aarch64.so.1), not the cross
# toolchain's copy under /usr/aarch64-linux-gnu: the loader and libc.so.6 must come from the
# same glibc build, and the toolchain's loader with the runtime's newer libc (the library search
# finds that one) hangs in the first pthread_create, walking a list whose layout differs.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /)
if(DEFINED ENV{DECODELAB_ARM64_ROOT})
  set(yaml-cpp_DIR "$ENV{DECODELAB_ARM64_ROOT}/usr/lib/aarch64-linux-gnu/cmake/yaml-cpp")
endif()
# Headers of header-only packages (CLI11, nlohmann-json, Catch2) are the host's; libraries are the target's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")  # GCC notes an ABI change of GCC 10 on every pair passed by value
