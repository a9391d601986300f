#!/usr/bin/env python3
"""Record KubeVirt's real virt-api refusing PUT expand-vm-spec bodies that are not JSON, for CI.

Starts etcd and kube-apiserver (../shared/k8s) and virt-api (``$KUBEVIRT_VIRT_API`` or where
../shared/oracle/build.sh puts it; without it this says so and exits 0) as tests/virtapi does, then PUTs
an example VM's JSON cut short at every length, with bytes replaced and inserted at seeded positions, and
a few hand-picked bodies, and keeps virt-api's answers that come from Go's ``json.Unmarshal`` (400
``Can not unmarshal Request body to struct, error: ...``), at most ``--per-message`` of each message. It
writes them, with the bodies, to ``tests/http/endpoints/virtapi_bodies.json``, which
tests/http/endpoints/test_virtapi_bodies.py replays against ours (``--kubevirt-error-codes``) without
virt-api.

    .venv/bin/python -m hack.oracle.virtapi_bodies [--seed N] [--samples N] [--per-message N] [--out FILE]
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from devcluster import virtapi
from devcluster.controlplane import ControlPlane, unavailable
from devcluster.paths import CRDS_FILE, REPO

OUT = REPO / "tests" / "http" / "endpoints" / "virtapi_bodies.json"
PATH = "/apis/subresources.kubevirt.io/v1/namespaces/default/expand-vm-spec"
PREFIX = "Can not unmarshal Request body to struct, error: "
BYTES = [
    b"x",
    b"}",
    b"]",
    b"{",
    b"[",
    b",",
    b":",
    b'"',
    b"\\",
    b"\x01",
    b"1",
    b"-",
    b".",
    b"e",
    b" ",
    b"\xff",
    b"t",
]
EXTRAS = [
    b'{"spec": {"x": "\\u12"}}',
    b'{"spec": {"x": "\\uZZZZ"}}',
    b'{"spec": {"x": "\\u00e9\\ud800"}}',
    b'{"spec": {"x": "\\`"}}',
    b'{"spec": {"x": "\\\t"}}',
    b'{"spec": {"x": "\xc3"}}',
    b'{"spec": {"x": -}}',
    b'{"spec": {"x": 1e+}}',
    b'{"spec": {"x": 01}}',
    b'{"spec": {"x": [1, 2}}',
    b'{"spec": {"x": {"a": 1]}}',
    b'{"spec": {"x": nulL}}',
    b'{"spec": {"x": fals}}',
    b"\xef\xbb\xbf{}",
    b"\t\n {} \n",
    b"{} x",
    b"[{}]",
    b"-1.5e3",
    b"false",
]


def example_vm() -> bytes:
    doc = yaml.safe_load((REPO / "examples" / "vm-fedora.yaml").read_text())
    return json.dumps(doc, separators=(",", ":")).encode()


def bodies(seed: int, samples: int) -> list[bytes]:
    base = example_vm()
    rng = random.Random(seed)
    found = [base[:n] for n in range(len(base))]
    for _ in range(samples):
        at = rng.randrange(len(base))
        piece = rng.choice(BYTES)
        found.append(base[:at] + piece + base[at + 1 :])
        found.append(base[:at] + piece + base[at:])
    return found + EXTRAS


def record(plane: ControlPlane, data: bytes) -> dict[str, Any] | None:
    answer = plane.request(PATH, method="PUT", body=data, headers={"Content-Type": "application/json"})
    try:
        body = answer.json()
    except ValueError:
        return None
    if answer.status != 400 or not str(body.get("message", "")).startswith(PREFIX):
        return None
    return {"body": base64.b64encode(data).decode(), "status": answer.status, "answer": body}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--samples", type=int, default=300, help="seeded replacements and insertions (each)")
    parser.add_argument("--per-message", type=int, default=3, help="cases kept per distinct message")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    reason = unavailable() or virtapi.unavailable()
    if reason:
        print(f"not run: {reason}")
        return 0
    kept: list[dict[str, Any]] = []
    per_message: Counter[str] = Counter()
    sent = 0
    with tempfile.TemporaryDirectory(prefix="virtapi-bodies-") as tmp:
        plane = ControlPlane(Path(tmp) / "plane")
        api: virtapi.VirtApi | None = None
        try:
            plane.start()
            plane.kubectl("apply", "-f", str(CRDS_FILE))
            plane.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
            api = virtapi.VirtApi(plane, Path(tmp) / "virt-api")
            api.start()
            for data in bodies(args.seed, args.samples):
                sent += 1
                case = record(plane, data)
                if case is None:
                    continue
                message = case["answer"]["message"]
                if per_message[message] < args.per_message:
                    per_message[message] += 1
                    kept.append(case)
        finally:
            if api is not None:
                api.stop()
            plane.close()
    provenance = (
        f"hack/oracle/virtapi_bodies.py --seed {args.seed} --samples {args.samples} --per-message "
        f"{args.per_message}: KubeVirt's virt-api (d923fdb, ../shared/oracle) answering PUT expand-vm-spec"
    )
    args.out.write_text(json.dumps({"provenance": provenance, "cases": kept}, indent=1) + "\n")
    print(
        f"{sent} bodies sent, {len(kept)} answers kept ({len(per_message)} distinct messages) in {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
