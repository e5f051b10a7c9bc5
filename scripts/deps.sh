#!/usr/bin/env bash
# Installs what reticle needs to build and test, from Debian 12 packages.
# Runs apt-get only when a package is missing, so repeated runs are quick.
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config
  libzydis-dev libzycore-dev libelf-dev libdw-dev libsqlite3-dev liblua5.4-dev
  valgrind sqlite3 bzip2 lua5.4 python3 g++ uftrace
  qemu-user gcc-riscv64-linux-gnu gcc-mipsel-linux-gnu
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "reticle: installing ${missing[*]}" >&2
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
