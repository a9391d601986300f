#!/usr/bin/env bash
# A real control plane on this machine (etcd, kube-apiserver, the KubeVirt CRDs) with the server registered
# behind its aggregator and examples/ loaded: `up`, `status`, `down`. See `hack/dev-cluster.sh --help`.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  up|status|down|""|-h|--help) ;;
  *) echo "dev-cluster.sh: unknown command: $1 (up, status or down; --help explains)" >&2; exit 2 ;;
esac
usage=$([[ $# -eq 0 ]] && echo 1 || echo 0)
for arg in "$@"; do
  case "$arg" in --) break ;; -h|--help) usage=1 ;; esac
done
if [[ $usage -eq 1 ]]; then
  # The usage needs only the standard library: no virtualenv is made for it.
  exec "$(command -v "${VENV:-.venv}/bin/python" || command -v python3)" -m devcluster "$@"
fi
# shellcheck source=hack/venv.sh
. hack/venv.sh >&2
exec "$VENV/bin/python" -m devcluster "$@"
