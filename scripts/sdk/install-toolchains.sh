#!/bin/sh
# Installs, from Debian, the toolchains `npm run sdk:check` drives generated clients with:
# Go, a JDK, PHP with curl, and Python's httpx. Skips what is already present. Run as root.
set -eu
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
