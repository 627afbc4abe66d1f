#!/bin/sh
# Installs, from Debian, the toolchains `npm run sdk:check` drives generated clients with:
# Go, a JDK, PHP with curl, and Python's httpx. Skips what is already present. Run as root.
set -eu
case "${1:-}" in
  -h | --help)
    echo "Usage: sh test/sdk/install-toolchains.sh   (as root)"
    echo
    echo "Installs from Debian what npm run sdk:check drives generated clients with: Go, a JDK,"
    echo "PHP with curl and Python's httpx; skips what is already there."
    exit 0 ;;
  "") ;;
  *)
    { echo "Unexpected argument: $1"; echo; echo "Usage: sh test/sdk/install-toolchains.sh   (as root)"; } >&2
    exit 2 ;;
esac
need=""
command -v go >/dev/null 2>&1 || need="$need golang-go"
command -v javac >/dev/null 2>&1 || need="$need default-jdk-headless"
command -v php >/dev/null 2>&1 || need="$need php-cli"
{ command -v php >/dev/null 2>&1 && php -m | grep -qx curl; } || need="$need php-curl"
/usr/bin/python3 -c 'import httpx' >/dev/null 2>&1 || need="$need python3-httpx"
if [ -n "$need" ]; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need
fi
