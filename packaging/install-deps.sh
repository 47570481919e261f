#!/bin/sh
# Installs the Debian 12 packages Ringmaster needs to build, run and test, and
# nothing when every one is present. Runs apt-get as root, or through sudo.
set -eu

PKGS="gcc make pkg-config libc6-dev
libmicrohttpd-dev libjansson-dev libpq-dev libcurl4-openssl-dev
libcriterion-dev libopenmpi-dev openmpi-bin
postgresql postgresql-contrib curl procps
libjs-dygraphs
python3-torch python3-mpi4py
chromium ${RINGMASTER_EXTRA_PKGS:-}"

# The browser suite runs on node (v20 or newer is preinstalled on our machines); Debian's
# nodejs and npm only where there is no node at all.
if ! command -v node >/dev/null 2>&1; then
    PKGS="$PKGS nodejs npm"
fi

missing=""
for p in $PKGS; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
    *" installed") ;;
    *) missing="$missing $p" ;;
    esac
done

if [ -z "$missing" ]; then
    exit 0
fi

echo "install-deps: installing:$missing"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-deps: need root or sudo to install:$missing" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# An install from a stale package list fails; refresh once and try again.
if ! $SUDO apt-get install -y --no-install-recommends $missing; then
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends $missing
fi
