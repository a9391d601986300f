#!/usr/bin/env bash
# Make a private CA and the server's serving certificate with openssl, and write them as a
# kubernetes.io/tls Secret manifest plus the APIService caBundle.
set -euo pipefail

usage() {
  cat <<USAGE
Usage: hack/gen-certs.sh [--out DIR] [--namespace NS] [--service NAME] [--san NAME]... [--days N] [--force]

Writes into DIR (default: .certs/ at the repository root, which git ignores):
  ca.crt, ca.key          a private CA (ECDSA P-256, 10 years), kept and reused on later runs
  tls.crt, tls.key        the serving certificate for NAME.NS.svc and NAME.NS.svc.cluster.local
                          (and every --san)
  serving-cert-secret.yaml  Secret NS/kubevirt-expand-serving-cert (type kubernetes.io/tls,
                          with ca.crt), the Secret the Deployment mounts
  cabundle                the CA as one base64 line: the value of an APIService's spec.caBundle
  cabundle-patch.json     a merge patch setting that caBundle:
                            kubectl patch apiservice NAME --type=merge -p "\$(cat DIR/cabundle-patch.json)"

An existing serving certificate that is still valid for more than 30 days and names the same
service and every --san is kept, so re-running this script (hack/deploy.sh does) rotates nothing; --force makes
a new serving certificate (and a new CA when given twice: --force --force).

Options:
  --out DIR        where to write (default: .certs)
  --namespace NS   the Service's namespace (default: kubevirt-expand)
  --service NAME   the Service's name (default: kubevirt-expand)
  --san NAME       one more name in the certificate: a DNS name or an IPv4 address (repeatable;
                   hack/run-local.sh asks for 127.0.0.1 and localhost)
  --days N         validity of the serving certificate in days (default: 365)
  --force          replace the serving certificate even if it is still good
  -h, --help       show this help
USAGE
}

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.certs"
namespace=kubevirt-expand
service=kubevirt-expand
days=365
force=0
sans=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --namespace) namespace="${2:?--namespace needs a value}"; shift 2 ;;
    --service) service="${2:?--service needs a value}"; shift 2 ;;
    --san) sans+=("${2:?--san needs a name or address}"); shift 2 ;;
    --days) days="${2:?--days needs a number}"; shift 2 ;;
    --force) force=$((force + 1)); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gen-certs.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ "$days" =~ ^[0-9]+$ ]] || { echo "gen-certs.sh: --days must be a number, got '$days'" >&2; exit 2; }
command -v openssl >/dev/null || { echo "gen-certs.sh: openssl is not installed" >&2; exit 1; }

mkdir -p "$out"
chmod 700 "$out"
cd "$out"
umask 077

dns1="$service.$namespace.svc"
dns2="$service.$namespace.svc.cluster.local"
# subjectAltName entries, and the form in which `openssl x509 -ext subjectAltName` prints each.
alt_names="DNS:$dns1,DNS:$dns2"
wanted=("DNS:$dns1" "DNS:$dns2")
for san in "${sans[@]}"; do
  if [[ "$san" =~ ^[0-9]+(\.[0-9]+){3}$ ]]; then
    alt_names+=",IP:$san"; wanted+=("IP Address:$san")
  elif [[ "$san" =~ ^[A-Za-z0-9*]([-A-Za-z0-9.*]*[A-Za-z0-9])?$ ]]; then
    alt_names+=",DNS:$san"; wanted+=("DNS:$san")
  else
    echo "gen-certs.sh: --san '$san' is neither a DNS name nor an IPv4 address" >&2; exit 2
  fi
done

if [[ $force -ge 2 || ! -s ca.crt || ! -s ca.key ]] || ! openssl x509 -in ca.crt -noout -checkend 2592000 >/dev/null; then
  echo "== making a new CA in $out"
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
    -subj "/CN=kubevirt-expand-ca" -days 3650 -keyout ca.key -out ca.crt \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  rm -f tls.crt tls.key
fi

serving_ok() {
  [[ -s tls.crt && -s tls.key ]] || return 1
  openssl verify -CAfile ca.crt tls.crt >/dev/null 2>&1 || return 1
  openssl x509 -in tls.crt -noout -checkend 2592000 >/dev/null || return 1
  local names
  names=$(openssl x509 -in tls.crt -noout -ext subjectAltName 2>/dev/null | tail -n +2 | tr -d ' ' | tr ',' '\n')
  for want in "${wanted[@]}"; do
    grep -qxF -- "${want// /}" <<<"$names" || return 1
  done
}

if [[ $force -ge 1 ]] || ! serving_ok; then
  echo "== making a serving certificate for $dns1 in $out"
  cat > tls.ext <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$alt_names
EXT
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
    -subj "/CN=$dns1" -keyout tls.key -out tls.csr 2>/dev/null
  openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
    -days "$days" -extfile tls.ext -out tls.crt 2>/dev/null
  rm -f tls.csr tls.ext
else
  echo "== keeping the serving certificate in $out (still valid; --force replaces it)"
fi

b64() { base64 < "$1" | tr -d '\n'; }

b64 ca.crt > cabundle
printf '{"spec":{"caBundle":"%s"}}\n' "$(cat cabundle)" > cabundle-patch.json
cat > serving-cert-secret.yaml <<SECRET
# Made by hack/gen-certs.sh: the serving certificate of $dns1 and the CA that signed it.
apiVersion: v1
kind: Secret
type: kubernetes.io/tls
metadata:
  name: kubevirt-expand-serving-cert
  namespace: $namespace
data:
  ca.crt: $(cat cabundle)
  tls.crt: $(b64 tls.crt)
  tls.key: $(b64 tls.key)
SECRET
echo "== wrote $out/serving-cert-secret.yaml and $out/cabundle (expires $(openssl x509 -in tls.crt -noout -enddate | cut -d= -f2))"
