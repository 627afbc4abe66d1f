#!/usr/bin/env bash
# Validates docker-compose.yml alone and with docker-compose.ports.yml (`docker compose
# config`: no Docker engine needed), checks the rules they must keep (compose-rules.ts),
# and HAProxy's configuration with `haproxy -c` when haproxy is installed.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash test/deploy/compose-check.sh   (a part of npm run deploy:check)

Validates docker-compose.yml alone and with docker-compose.ports.yml (docker compose config,
or Debian's docker-compose: no engine needed), checks the rules they must keep
(test/deploy/compose-rules.ts), and runs haproxy -c on deploy/haproxy/haproxy.cfg when
haproxy is installed.
USAGE
}
# shellcheck source=cli.sh
. "$(dirname "$0")/cli.sh"
no_arguments_but_help "$@"

cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
else
  echo "compose-check: needs 'docker compose' or docker-compose (apt-get install -y docker-compose)" >&2
  exit 1
fi
echo "=== compose-check: ${compose[*]} config ($("${compose[@]}" version --short 2>/dev/null || "${compose[@]}" version | head -n 1)) ==="
# Neither this shell's variables nor a local .env: the files' own defaults are checked.
config() { env -u POSTGRES_PASSWORD -u TRUST_PROXY -u POSTGRES_HOST_PORT -u REDIS_HOST_PORT "${compose[@]}" --env-file "$work/none.env" "$@" config; }
: >"$work/none.env"
config -f docker-compose.yml >"$work/base.yml"
echo "  ok    docker-compose.yml is valid"
config -f docker-compose.yml -f docker-compose.ports.yml >"$work/ports.yml"
echo "  ok    docker-compose.yml + docker-compose.ports.yml is valid"

npx --no-install tsx test/deploy/compose-rules.ts "$work/base.yml" "$work/ports.yml"

if command -v haproxy >/dev/null; then
  echo "=== compose-check: haproxy -c ($(haproxy -v | head -n 1 | cut -d' ' -f1-3); the compose file runs haproxy:3.0) ==="
  haproxy -c -f deploy/haproxy/haproxy.cfg
else
  echo "  skip  haproxy -c: haproxy is not installed (apt-get install -y haproxy)"
fi
