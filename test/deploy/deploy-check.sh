#!/usr/bin/env bash
# npm run deploy:check: the deployment files, checked without Docker or a cluster.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: npm run deploy:check

Checks the deployment files without Docker or a cluster: docker-compose.yml (alone and with
docker-compose.ports.yml) and its rules, deploy/haproxy/haproxy.cfg with haproxy -c, and the
Kubernetes manifests in deploy/kubernetes/ against their schemas and against each other
(test/deploy/k8s-check.ts). Needs docker compose or Debian's docker-compose; uses haproxy
and kubectl when installed. Exits 1 at the first failed check.
USAGE
}
# shellcheck source=cli.sh
. "$(dirname "$0")/cli.sh"
no_arguments_but_help "$@"

cd "$(dirname "$0")/../.."
bash test/deploy/compose-check.sh
npx --no-install tsx test/deploy/k8s-check.ts
