#!/usr/bin/env bash
# Installs what reticle needs to build and test, from Debian 12 packages, and
# the two package sources the simulator's tests use: the mipsel architecture
# (Debian's busybox-static:mipsel) and deb-src entries (lua5.4's source, built
# for riscv64). Runs apt-get only when something is missing, so repeated runs
# are quick.
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config clang
  libzydis-dev libzycore-dev libelf-dev libdw-dev libsqlite3-dev liblua5.4-dev libiberty-dev libedit-dev
  valgrind sqlite3 bzip2 lua5.4 python3 libpython3.11-testsuite g++ uftrace dpkg-dev
  openjdk-17-jdk-headless golang-go nodejs openssl libc6-dbg gdb lcov bolt-16
  libdebuginfod-dev debuginfod curl openmpi-bin libopenmpi-dev mpich libmpich-dev
  qemu-user gcc-riscv64-linux-gnu gcc-mipsel-linux-gnu linux-perf
  luajit ocaml-nox mono-runtime mono-mcs gccgo
)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
update=0
if ! dpkg --print-foreign-architectures | grep -qx mipsel; then
  echo "reticle: adding the mipsel architecture (busybox-static:mipsel for the simulator tests)" >&2
  $SUDO dpkg --add-architecture mipsel
  update=1
fi
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    echo "reticle: adding deb-src entries (apt-get source lua5.4 for the simulator tests)" >&2
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
      $SUDO tee /etc/apt/sources.list.d/reticle-src.sources >/dev/null
    update=1
  fi
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] || [ $update -eq 1 ]; then
  $SUDO apt-get update -q
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "reticle: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi
