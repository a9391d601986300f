#!/usr/bin/env bash
# Run the server on this machine against the cluster of the current kubeconfig context, and
# write a kubeconfig with which kubectl calls it (same user credentials, server 127.0.0.1).
set -euo pipefail

usage() {
  cat <<USAGE
Usage: hack/run-local.sh [--port N] [--context NAME] [-- SERVE_FLAGS...]

Starts \`kubevirt-expand serve\` on https://127.0.0.1:PORT reading VMs, instancetypes and
preferences from the cluster of your kubeconfig (KUBECONFIG, else ~/.kube/config) with your own
credentials, so they need the reads apiservice/base/rbac.yaml grants the server's service account
(cluster-admin has them). Requests to it are authenticated and authorized by that cluster like
any aggregated API server's: a client certificate of the cluster's client CA or a bearer token
(TokenReview), then a SubjectAccessReview.

It writes .certs/run-local/PORT/ (git-ignored; one folder per port, so instances on two ports
never share a file): a serving certificate from hack/gen-certs.sh for 127.0.0.1 and localhost
(and the Service's name), its CA in ca.crt, and client.kubeconfig, a copy of your context pointing
at the local server, for example:
  kubectl --kubeconfig .certs/run-local/8443/client.kubeconfig get --raw \\
    /apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/NAME/expand-spec
  curl --cacert .certs/run-local/8443/ca.crt https://127.0.0.1:8443/readyz

Options:
  --port N         the local port (default: 8443)
  --context NAME   a kubeconfig context other than the current one
  -h, --help       show this help
Everything after -- goes to \`kubevirt-expand serve\` (e.g. -- --api-group=expand.kubevirt-expand.io).
Environment: KUBECTL (default: kubectl); KUBEVIRT_EXPAND, the kubevirt-expand command to run
(default: the one in VENV, default .venv, made from this checkout on the first run).
USAGE
}

root="$(cd "$(dirname "$0")/.." && pwd)"
kubectl="${KUBECTL:-kubectl}"
port=8443
context=""
serve_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --port) port="${2:?--port needs a number}"; shift 2 ;;
    --context) context="${2:?--context needs a name}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; serve_args=("$@"); break ;;
    *) echo "run-local.sh: unknown argument: $1 (flags for the server go after --)" >&2; usage >&2; exit 2 ;;
  esac
done
[[ "$port" =~ ^[0-9]+$ ]] || { echo "run-local.sh: --port must be a number" >&2; exit 2; }
command -v "$kubectl" >/dev/null || { echo "run-local.sh: $kubectl not found (set KUBECTL)" >&2; exit 1; }

ctx_args=()
[[ -z "$context" ]] || ctx_args=(--context "$context")
if ! "$kubectl" "${ctx_args[@]}" get --raw /api >/dev/null 2>&1; then
  echo "run-local.sh: the cluster of the kubeconfig context ${context:-(current)} does not answer:" >&2
  "$kubectl" "${ctx_args[@]}" get --raw /api >&2 || true
  exit 1
fi

work="$root/.certs/run-local/$port"
mkdir -p "$work"
chmod 700 "$root/.certs/run-local" "$work"
"$root/hack/gen-certs.sh" --out "$work" --san 127.0.0.1 --san localhost >/dev/null

# The server's kubeconfig: the chosen context alone, credentials embedded.
(umask 077; "$kubectl" config view --minify --flatten --raw "${ctx_args[@]}" > "$work/server.kubeconfig")
# The client's: the same, with the cluster entry pointing at the local server and its CA.
cp "$work/server.kubeconfig" "$work/client.kubeconfig"
cluster=$("$kubectl" --kubeconfig "$work/client.kubeconfig" config view -o 'jsonpath={.clusters[0].name}')
"$kubectl" --kubeconfig "$work/client.kubeconfig" config unset "clusters.$cluster" >/dev/null
"$kubectl" --kubeconfig "$work/client.kubeconfig" config set-cluster "$cluster" \
  --server="https://127.0.0.1:$port" --certificate-authority="$work/ca.crt" --embed-certs=true >/dev/null

cd "$root"
if [[ -z "${KUBEVIRT_EXPAND:-}" ]]; then
  # shellcheck source=hack/venv.sh
  . hack/venv.sh
  KUBEVIRT_EXPAND="$VENV/bin/kubevirt-expand"
fi
echo "== serving on https://127.0.0.1:$port for the cluster of context ${context:-$("$kubectl" config current-context 2>/dev/null || echo '(none)')}"
echo "== call it with: kubectl --kubeconfig $work/client.kubeconfig get --raw /apis"
exec "$KUBEVIRT_EXPAND" serve \
  --kubeconfig="$work/server.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$port" \
  --tls-cert-file="$work/tls.crt" --tls-private-key-file="$work/tls.key" \
  --cert-dir="$work/cert-dir" \
  "${serve_args[@]}"
