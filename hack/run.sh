#!/usr/bin/env bash
# Set up .venv (first run) and serve the example manifests on https://127.0.0.1:8443 with no cluster.
# Extra arguments go to `kubevirt-expand serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/venv.sh
exec "$VENV/bin/kubevirt-expand" serve --manifests examples/ "$@"
