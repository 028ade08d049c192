#!/usr/bin/env bash
# Installs the Debian 12 packages multi2 needs to build, test and run (as root; uses sudo otherwise).
# Skips apt entirely when everything is already there.
set -euo pipefail
PKGS="build-essential cmake pkg-config clang libclang-rt-14-dev libopenblas-dev libcjson-dev libyaml-dev libcmocka-dev libpcre2-dev libcairo2-dev fonts-dejavu-core libopenmpi-dev openmpi-bin libmicrohttpd-dev python3"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
