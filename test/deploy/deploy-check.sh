#!/usr/bin/env bash
# npm run deploy:check: the deployment files, checked without Docker or a cluster.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: npm run deploy:check

Checks the deployment files without Docker or a cluster: docker-compose.yml (alone and with
docker-compose.ports.yml) with docker compose config and the rules it must keep
(test/deploy/compose-rules.ts), deploy/haproxy/haproxy.cfg with haproxy -c, and the
Kubernetes manifests in deploy/kubernetes/ against their schemas and against each other
(test/deploy/k8s-check.ts). Needs docker compose or Debian's docker-compose; uses haproxy
and kubectl when installed. Exits 1 at the first failed check.
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
  echo "deploy:check: needs 'docker compose' or docker-compose (apt-get install -y docker-compose)" >&2
  exit 1
fi
echo "=== deploy:check: ${compose[*]} config ($("${compose[@]}" version --short 2>/dev/null || "${compose[@]}" version | head -n 1)) ==="
# Neither this shell's variables nor a local .env: the files' own defaults are checked.
config() { env -u POSTGRES_PASSWORD -u TRUST_PROXY -u POSTGRES_HOST_PORT -u REDIS_HOST_PORT "${compose[@]}" --env-file "$work/none.env" "$@" config; }
: >"$work/none.env"
config -f docker-compose.yml >"$work/base.yml"
echo "  ok    docker-compose.yml is valid"
config -f docker-compose.yml -f docker-compose.ports.yml >"$work/ports.yml"
echo "  ok    docker-compose.yml + docker-compose.ports.yml is valid"
npx --no-install tsx test/deploy/compose-rules.ts "$work/base.yml" "$work/ports.yml"

if command -v haproxy >/dev/null; then
  echo "=== deploy:check: haproxy -c ($(haproxy -v | head -n 1 | cut -d' ' -f1-3); the compose file runs haproxy:3.0) ==="
  haproxy -c -f deploy/haproxy/haproxy.cfg
else
  echo "  skip  haproxy -c: haproxy is not installed (apt-get install -y haproxy)"
fi

npx --no-install tsx test/deploy/k8s-check.ts
