#!/usr/bin/env bash
# npm run deploy:check: the deployment files, checked without Docker or a cluster.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: npm run deploy:check

Checks the deployment files without Docker or a cluster: docker-compose.yml (alone and with
docker-compose.ports.yml) and its rules, deploy/haproxy/haproxy.cfg with haproxy -c, and the
Kubernetes manifests in deploy/kubernetes/ against their schemas and against each other
(scripts/image/k8s-check.ts). Needs docker compose or Debian's docker-compose; uses haproxy
and kubectl when installed. Exits 1 at the first failed check.
USAGE
}
# shellcheck source=../lib/cli.sh
. "$(dirname "$0")/../lib/cli.sh"
no_arguments_but_help "$@"

cd "$(dirname "$0")/../.."
bash scripts/image/compose-check.sh
npx --no-install tsx scripts/image/k8s-check.ts
