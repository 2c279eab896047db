# Cross build for aarch64 Linux with Debian's g++-aarch64-linux-gnu; tests run under qemu-user.
#   cmake -S . -B build-arm -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DDQ4_BUILD_TOOLS=OFF
# The C and C++ runtimes live in the cross sysroot /usr/aarch64-linux-gnu; the libraries dq4 uses
# (PCRE2, ICU) are Debian's arm64 multiarch packages (libpcre2-dev:arm64, libicu-dev:arm64, from
# scripts/install-deps.sh) under /usr/lib/aarch64-linux-gnu; Boost and nlohmann-json are headers.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)  # GoogleTest's project() also enables C
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(DQ4_AARCH64_SYSROOT /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH ${DQ4_AARCH64_SYSROOT} /)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${DQ4_AARCH64_SYSROOT})

# pkg-config reads the arm64 .pc files, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# Static executables: qemu-aarch64 7.2 (Debian 12) on some x86 hosts hangs inside the
# dynamic glibc's pthread_create (a list walk that never ends under chained translation blocks),
# so every test that starts a thread would hang; the same code linked statically runs.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(DQ4_STATIC_EXECUTABLES ON)  # CMakeLists.txt then finds the libraries' static archives
