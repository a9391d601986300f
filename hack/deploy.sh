#!/usr/bin/env bash
# Install (or remove) kubevirt-expand-apiserver on the cluster of the current kubeconfig context
# with one of the apiservice/overlays, then wait until its APIServices are Available.
set -euo pipefail

usage() {
  cat <<USAGE
Usage: hack/deploy.sh [options] OVERLAY
       hack/deploy.sh --delete OVERLAY

OVERLAY is one of:
  kubevirt-group  serve subresources.kubevirt.io v1 and v1alpha3 (clusters where KubeVirt's virt-api
                  does not serve that group; virt-operator owns it where KubeVirt is installed)
  own-group       serve expand.kubevirt-expand.io v1, beside KubeVirt's virt-api
  cert-manager    own-group with its certificate from cert-manager (same as: own-group --cert-manager)

Without --cert-manager the serving certificate comes from hack/gen-certs.sh (kept in .certs/ and
reused on later runs); its CA goes into the APIServices' caBundle through components/ca-bundle.

Options:
  --cert-manager   let cert-manager (already installed) issue the certificate and inject the caBundle
  --image IMAGE    the server's image, e.g. registry.example/kubevirt-expand-apiserver:0.1.0
                   (default: what apiservice/base/kustomization.yaml names)
  --timeout SECS   how long to wait for the rollout and for the APIServices (default: 180)
  --takeover       register subresources.kubevirt.io even if another service (virt-api) owns it
  --dry-run        print the manifests that would be applied, and do nothing: no cluster call, no
                   file written (without a certificate in .certs/ yet, the Secret and caBundle shown
                   come from a throwaway CA)
  --delete         remove everything the overlay installed (APIServices first, also those of another
                   overlay that route to this server)
  -h, --help       show this help

Switching overlays (own-group over kubevirt-group, or back) removes the APIServices of the old one
that route to this server: it no longer serves their group-versions, and an unavailable APIService
breaks discovery for every kubectl user of the cluster.

Environment: KUBECTL (default: kubectl); the usual KUBECONFIG selects the cluster.
USAGE
}

root="$(cd "$(dirname "$0")/.." && pwd)"
kubectl="${KUBECTL:-kubectl}"
namespace=kubevirt-expand
cert_manager=0
image=""
timeout=180
takeover=0
dry_run=0
delete=0
overlay=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cert-manager) cert_manager=1; shift ;;
    --image) image="${2:?--image needs a value}"; shift 2 ;;
    --timeout) timeout="${2:?--timeout needs seconds}"; shift 2 ;;
    --takeover) takeover=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    --delete) delete=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "deploy.sh: unknown option: $1" >&2; usage >&2; exit 2 ;;
    *) [[ -z "$overlay" ]] || { echo "deploy.sh: one OVERLAY only" >&2; exit 2; }; overlay="$1"; shift ;;
  esac
done
[[ -n "$overlay" ]] || { usage >&2; exit 2; }
if [[ "$overlay" == cert-manager ]]; then overlay=own-group; cert_manager=1; fi
[[ -d "$root/apiservice/overlays/$overlay" ]] || {
  echo "deploy.sh: no overlay '$overlay' (have: $(ls "$root/apiservice/overlays" | tr '\n' ' '))" >&2; exit 2; }
[[ "$timeout" =~ ^[0-9]+$ ]] || { echo "deploy.sh: --timeout must be whole seconds" >&2; exit 2; }
command -v "$kubectl" >/dev/null || { echo "deploy.sh: $kubectl not found (set KUBECTL)" >&2; exit 1; }

# The cluster first: nothing is written (no CA, no key in .certs/) for a cluster kubectl cannot reach.
if [[ $dry_run -eq 0 ]]; then
  if ! reach=$("$kubectl" get --raw /version --request-timeout=15s 2>&1 >/dev/null); then
    echo "deploy.sh: cannot reach the cluster of the current kubeconfig context ($reach); nothing was" \
      "written or changed. Check KUBECONFIG and 'kubectl config current-context'." >&2
    exit 1
  fi
fi

# A throwaway kustomization beside the certificates (.certs/ is git-ignored; a dry run uses a temporary
# folder instead, removed on exit): the overlay, the certificate source, and the image override.
certs="$root/.certs"
if [[ $dry_run -eq 1 ]]; then
  build=$(mktemp -d)
  trap 'rm -rf "$build"' EXIT
else
  build="$certs/deploy-$overlay"
  rm -rf "$build"
  mkdir -p "$build"
fi
# Kustomize only accepts relative paths to the overlay and components.
up=$(realpath --relative-to="$build" "$root" 2>/dev/null ||
  python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$root" "$build")
{
  echo "# Made by hack/deploy.sh; safe to delete."
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "  - $up/apiservice/overlays/$overlay"
  if [[ $cert_manager -eq 0 ]]; then echo "  - serving-cert-secret.yaml"; fi
  echo "components:"
  if [[ $cert_manager -eq 1 ]]; then
    echo "  - $up/apiservice/components/cert-manager"
  else
    echo "  - $up/apiservice/components/ca-bundle"
  fi
  if [[ -n "$image" ]]; then
    echo "images:"
    echo "  - name: kubevirt-expand-apiserver"
    if [[ "$image" == *@* ]]; then
      echo "    newName: \"${image%@*}\""
      echo "    digest: \"${image#*@}\""
    elif [[ "${image##*/}" == *:* ]]; then
      echo "    newName: \"${image%:*}\""
      echo "    newTag: \"${image##*:}\""
    else
      echo "    newName: \"$image\""
    fi
  fi
} > "$build/kustomization.yaml"

if [[ $cert_manager -eq 0 && $delete -eq 0 && $dry_run -eq 1 ]]; then
  # What a real run would apply, without writing .certs/: the kept certificate, or a throwaway one.
  mkdir -m 700 "$build/certs"
  for f in ca.crt ca.key tls.crt tls.key; do [[ ! -f "$certs/$f" ]] || cp -p "$certs/$f" "$build/certs/"; done
  [[ -s "$certs/ca.crt" ]] || echo "deploy.sh: dry run: no CA in $certs yet; the Secret and caBundle below come from a throwaway one (a real run makes and keeps its own)" >&2
  certs="$build/certs"
fi
if [[ $cert_manager -eq 0 ]]; then
  if [[ $delete -eq 0 ]]; then
    "$root/hack/gen-certs.sh" --out "$certs" --namespace "$namespace" --service kubevirt-expand >&2
  fi
  if [[ -s "$certs/serving-cert-secret.yaml" ]]; then
    cp "$certs/serving-cert-secret.yaml" "$build/"
  else
    # --delete with no certificate made: any Secret of that name is deleted all the same.
    printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: kubevirt-expand-serving-cert\n  namespace: %s\ndata:\n  ca.crt: ""\n' \
      "$namespace" > "$build/serving-cert-secret.yaml"
  fi
fi

rendered="$build/rendered.yaml"
"$kubectl" kustomize "$build" > "$rendered"
apiservices=$(awk '/^kind: APIService$/ {a=1} a && /^  name: / {print $2; a=0} /^---$/ {a=0}' "$rendered")

if [[ $dry_run -eq 1 ]]; then
  if [[ $delete -eq 1 ]]; then
    # Say so: the objects below would be removed, not applied.
    echo "deploy.sh: dry run of --delete: the objects below would be DELETED (the APIServices first, and" \
      "any other APIService routed to this server's Service, which only the cluster can tell)" >&2
    echo "# hack/deploy.sh --dry-run --delete $overlay: these objects would be deleted, not applied"
  fi
  cat "$rendered"
  exit 0
fi

# The APIServices that route to this server's Service, whichever overlay registered them.
routed_here() {
  "$kubectl" get apiservices -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{.spec.service.namespace}{"/"}{.spec.service.name}{"\n"}{end}' |
    awk -v svc="$namespace/kubevirt-expand" '$2 == svc {print $1}'
}
# Those among them this overlay does not register: left by another overlay.
stale() {
  local found a
  found=$(routed_here) || { echo "deploy.sh: cannot list the cluster's APIServices" >&2; return 1; }
  for a in $found; do
    grep -qxF "$a" <<<"$apiservices" || echo "$a"
  done
}

if [[ $delete -eq 1 ]]; then
  # APIServices first, so discovery never points at a server that is going away; also those another
  # overlay left routed here, which would otherwise stay unavailable once the Service is gone.
  others=$(stale)
  for a in $apiservices $others; do "$kubectl" delete apiservice "$a" --ignore-not-found; done
  "$kubectl" delete -f "$rendered" --ignore-not-found --wait=false
  echo "== removed the $overlay overlay (the namespace $namespace finishes terminating in the background)"
  exit 0
fi

if [[ $cert_manager -eq 1 ]] && ! "$kubectl" get crd certificates.cert-manager.io >/dev/null 2>&1; then
  echo "deploy.sh: cert-manager is not installed (no CRD certificates.cert-manager.io); install it or drop --cert-manager" >&2
  exit 1
fi

# Refuse to take over a group-version another server (virt-api) is registered for.
for a in $apiservices; do
  owner=$("$kubectl" get apiservice "$a" -o 'jsonpath={.spec.service.namespace}/{.spec.service.name}' 2>/dev/null || true)
  if [[ -n "$owner" && "$owner" != "$namespace/kubevirt-expand" && "$owner" != "/" && $takeover -eq 0 ]]; then
    echo "deploy.sh: APIService $a already routes to $owner (KubeVirt's virt-api?)." >&2
    echo "  Where KubeVirt is installed, virt-operator re-creates it on every reconcile: use the own-group" >&2
    echo "  overlay instead, or pass --takeover if you know the other server is gone." >&2
    exit 1
  fi
done

# Switching overlays: the old one's APIServices would route to a server that no longer serves them.
others=$(stale)
for a in $others; do
  echo "== removing APIService $a: it routes to this server, which the $overlay overlay no longer makes serve it"
  "$kubectl" delete apiservice "$a" --ignore-not-found
done

echo "== applying overlay $overlay ($( [[ $cert_manager -eq 1 ]] && echo cert-manager || echo gen-certs ) certificate)"
"$kubectl" apply -f "$rendered"

diagnose() {
  echo >&2
  echo "---- what the cluster says" >&2
  for a in $apiservices; do
    "$kubectl" get apiservice "$a" -o 'jsonpath={.metadata.name}: {range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
  done
  "$kubectl" -n "$namespace" get deploy,pods -o wide >&2 || true
  "$kubectl" -n "$namespace" logs deploy/kubevirt-expand --tail=20 >&2 || true
  cat >&2 <<HINTS

---- common causes
  * Pods Pending or ImagePullBackOff: the image is not reachable from the nodes (--image REGISTRY/NAME:TAG).
  * Pods ContainerCreating: the Secret kubevirt-expand-serving-cert is missing (cert-manager not done yet?).
  * Pods not Ready: /readyz fails until the caches have synced (a "forbidden" in the logs: the
    ClusterRole kubevirt-expand:reader is missing a rule). Each check's state, POD from the list above
    (why a check fails is in the pod's log; the proxy does not pass your identity, so the answer withholds it):
    kubectl get --raw '/api/v1/namespaces/$namespace/pods/https:POD:8443/proxy/readyz?verbose'
  * APIService FailedDiscoveryCheck "x509: certificate signed by unknown authority": the caBundle does not
    match the serving certificate; re-run this script (it re-applies both), or hack/gen-certs.sh --force.
  * APIService FailedDiscoveryCheck with 401/403: the server rejected the aggregator's client certificate;
    its log names the front-proxy CA and the CNs it expected (requestheader-* in
    kube-system/extension-apiserver-authentication).
  * MissingEndpoints / ServiceNotFound: no Ready pod behind the Service yet.
HINTS
}

deadline=$(( $(date +%s) + timeout ))
echo "== waiting up to ${timeout}s for the Deployment to roll out"
if ! "$kubectl" -n "$namespace" rollout status deploy/kubevirt-expand --timeout="${timeout}s"; then
  echo "deploy.sh: the Deployment did not become ready within ${timeout}s" >&2
  diagnose
  exit 1
fi
for a in $apiservices; do
  left=$(( deadline - $(date +%s) ))
  (( left > 5 )) || left=5
  echo "== waiting up to ${left}s for APIService $a to be Available"
  if ! "$kubectl" wait --for=condition=Available "apiservice/$a" --timeout="${left}s"; then
    echo "deploy.sh: APIService $a is not Available" >&2
    diagnose
    exit 1
  fi
done
group=$(sed -n 's/^ *- --api-group=//p' "$rendered" | head -n 1)
echo "== ready. Try:"
echo "   kubectl get --raw /apis/$group"
echo "   kubectl get --raw /apis/$group/v1/namespaces/NAMESPACE/virtualmachines/NAME/expand-spec"
echo "   kubectl get expandedvirtualmachines -A   (the rendered VMs; -o wide, -w, -o yaml)"
