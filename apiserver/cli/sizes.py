"""``kubevirt-expand catalog sizes``: a ConfigMap of what each instancetype's virt-launcher pod requests,
for admission policies that can read only the VM object (a ValidatingAdmissionPolicy's ``paramRef``).

Each instancetype of the catalog (a file, or the cluster as ``catalog snapshot`` reads it) is used by a
minimal VM, rendered as ``resources`` renders a VM (expand, then KubeVirt's VM controller, VMI webhook and
template service): the VM names the instancetype and nothing else (no preference, no disks, no
interfaces of its own: KubeVirt's default pod network interface), in a namespace without labels or
ResourceQuotas, on the KubeVirt CR's default architecture. A real VM's devices, network bindings and
preference change its pod's overhead (most add to it; no graphics device takes 32Mi from it): the
figures are the pod of that minimal VM, not a bound.

The data's keys, all ``[-._a-zA-Z0-9]`` as ConfigMap keys must be: ``cluster.<name>.<resource>`` for a
VirtualMachineClusterInstancetype, ``ns.<namespace>.<name>.<resource>`` for a VirtualMachineInstancetype
(namespace names hold no dot, so the two never meet), for each of :data:`RESOURCES`: ``memory`` (the
pod's memory request, bytes), ``hugepages`` (its ``hugepages-<size>`` requests summed, bytes: an
instancetype with ``spec.memory.hugepages`` takes its guest memory as hugepages, beside a memory request
of the overhead alone, so a cap on memory must add them) and ``cpu`` (millicores); integers, as CEL in
kube-apiserver v1.28 has no quantity type. The pod's other resources (ephemeral storage, device plugins'
``devices.kubevirt.io/*``, GPUs and host devices) are not given.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from apiserver.cli.catalog import SnapshotError, _write, read_catalog_objects
from apiserver.cli.clusterread import add_connection_flags, exits_unusable, read_cluster
from apiserver.cli.helpformat import KubeHelpFormatter
from apiserver.cli.inputs import UsageError, pick_kubevirt, read_catalog, read_kubevirt
from apiserver.cli.output import printable
from apiserver.cli.report import EXIT_ADMITTED
from apiserver.render import ExpandError, ObjectIndex, expand
from apiserver.render.kubernetes.quantity import parse_quantity
from apiserver.render.launcher import ARCHITECTURES, launch
from apiserver.render.objects import CLUSTER_INSTANCETYPE, INSTANCETYPE
from apiserver.render.virtconfig import cluster_config

HUGEPAGES_PREFIX = "hugepages-"  # Kubernetes' resource name of each page size: hugepages-2Mi, hugepages-1Gi

EXAMPLES = """\
examples:
  # The current cluster's instancetypes (and team-a's own) as ConfigMap kubevirt-expand/vm-sizes
  kubevirt-expand catalog sizes --cluster -n team-a --configmap kubevirt-expand/vm-sizes | kubectl apply -f -

  # From a catalog file (a snapshot, common-instancetypes' bundle)
  kubevirt-expand catalog sizes -f catalog.yaml --configmap kubevirt-expand/vm-sizes -o vm-sizes.yaml

exit status:
  0  the ConfigMap was written (an instancetype that does not render is left out, with a warning)
  2  it could not be: unreadable input, a cluster that cannot be read, a usage error
"""

ASSUMPTION_ANNOTATION = "kubevirt-expand.io/assumption"
RESOURCES_ANNOTATION = "kubevirt-expand.io/resources"
# Each key's resource and what its figure is; the ConfigMap's annotation says the same.
RESOURCES = {
    "memory": "the pod's memory request (bytes)",
    "hugepages": "its hugepages-<size> requests summed (bytes)",
    "cpu": "its CPU request (millicores)",
}
RESOURCES_TEXT = (
    "; ".join(f"{key}: {what}" for key, what in RESOURCES.items())
    + "; not given: ephemeral storage and device-plugin resources (devices.kubevirt.io/*, GPUs, host devices)"
)
ASSUMPTION = (
    "each figure is the virt-launcher pod of a minimal VM naming the instancetype and nothing else (no "
    "preference, no devices of its own, the default pod network interface), in a namespace without "
    "labels or quotas, on the KubeVirt CR's default architecture; a VM's own devices and preference change it"
)


def add_parser(actions: Any) -> None:
    parser: argparse.ArgumentParser = actions.add_parser(
        "sizes",
        help="write a ConfigMap of each instancetype's virt-launcher pod requests (for admission policies)",
        description=(
            "Render a minimal VM for each instancetype of a catalog (a file, or the current cluster) and "
            "write a ConfigMap whose data gives its virt-launcher pod's memory request (bytes), hugepages "
            "requests summed (bytes) and CPU request (millicores): cluster.<name>.memory, "
            "cluster.<name>.hugepages, cluster.<name>.cpu, and ns.<namespace>.<name>.<the same> for a "
            "namespaced instancetype. A ValidatingAdmissionPolicy reads it as its parameter "
            "(docs/cost.md)."
        ),
        epilog=EXAMPLES,
        formatter_class=KubeHelpFormatter,
    )
    parser.add_argument("--configmap", required=True, metavar="NAMESPACE/NAME", help="the ConfigMap to write")
    parser.add_argument(
        "-f", "--filename", action="append", metavar="FILE|DIR|-", help="a catalog to read (or --cluster)"
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="read the current cluster's instancetypes and KubeVirt CR (kubeconfig, as catalog snapshot; "
        "needs the cluster extra)",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="with --cluster: also this namespace's own instancetypes; repeatable",
    )
    parser.add_argument("--kubevirt", metavar="FILE", help="KubeVirt CR or KubeVirtConfiguration")
    parser.add_argument(
        "--arch",
        choices=ARCHITECTURES,
        help="the architecture virt-controller runs on (default: the KubeVirt CR's default architecture)",
    )
    parser.add_argument(
        "-o", "--output", default="-", metavar="FILE", help="where to write it (default: stdout)"
    )
    add_connection_flags(parser)
    parser.set_defaults(func=run)


def _configmap_ref(value: str) -> tuple[str, str]:
    namespace, slash, name = value.partition("/")
    if not slash or not namespace or not name or "/" in name:
        raise UsageError(f"--configmap {value!r}: expected NAMESPACE/NAME")
    return namespace, name


def _run(args: argparse.Namespace) -> int:
    if args.cluster == bool(args.filename):
        raise UsageError("give either -f FILE|DIR|- or --cluster")
    if args.namespace and not args.cluster:
        raise UsageError("-n/--namespace reads a cluster's namespace: give --cluster")
    namespace, name = _configmap_ref(args.configmap)
    explicit = read_kubevirt(args.kubevirt, sys.stdin.buffer) if args.kubevirt else None
    if args.cluster:
        objects, notes = read_cluster(
            args,
            lambda client: read_catalog_objects(
                client, args.namespace, kubevirt=explicit is None, what="the sizes"
            ),
        )
        for note in notes:
            print(note, file=sys.stderr)
        kubevirt = (
            explicit if explicit is not None else next((o for o in objects if o["kind"] == "KubeVirt"), None)
        )
    else:
        catalog = read_catalog(args.filename, namespace="default", stdin=sys.stdin.buffer)
        objects = catalog.objects
        kubevirt = explicit if explicit is not None else pick_kubevirt(catalog.kubevirts)
    data, problems = sizes(objects, kubevirt, arch=args.arch)
    for problem in problems:
        print(f"Warning: {printable(problem)}", file=sys.stderr)
    try:
        _write(args.output, render(namespace, name, data))
    except SnapshotError as err:
        raise UsageError(str(err)) from None
    where = "stdout" if args.output == "-" else args.output
    print(
        f"sizes: wrote ConfigMap {namespace}/{name} ({_instancetypes(len(data) // len(RESOURCES))}: "
        f"{', '.join(RESOURCES)} requests) to {where}",
        file=sys.stderr,
    )
    return EXIT_ADMITTED


def _instancetypes(n: int) -> str:
    return "1 instancetype" if n == 1 else f"{n} instancetypes"


def minimal_vm(kind: str, name: str, namespace: str) -> dict[str, Any]:
    """The VM each figure is rendered for (see the module docstring)."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "sizes", "namespace": namespace},
        "spec": {
            "runStrategy": "Halted",
            "instancetype": {"kind": kind, "name": name},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }


def key_prefix(kind: str, name: str, namespace: str) -> str:
    return f"cluster.{name}" if kind == CLUSTER_INSTANCETYPE else f"ns.{namespace}.{name}"


def sizes(
    objects: Sequence[Mapping[str, Any]], kubevirt: Mapping[str, Any] | None, *, arch: str | None = None
) -> tuple[dict[str, str], list[str]]:
    """The ConfigMap's data and, for each instancetype that does not render, why."""
    index = ObjectIndex(objects)
    architecture = arch or cluster_config(kubevirt).default_architecture or "amd64"
    data: dict[str, str] = {}
    problems: list[str] = []
    found = [
        o
        for o in objects
        if o.get("kind") in (CLUSTER_INSTANCETYPE, INSTANCETYPE) and (o.get("metadata") or {}).get("name")
    ]
    found.sort(
        key=lambda o: (
            o["kind"] != CLUSTER_INSTANCETYPE,
            o["metadata"].get("namespace", ""),
            o["metadata"]["name"],
        )
    )
    for obj in found:
        kind, meta = str(obj["kind"]), obj["metadata"]
        name, namespace = str(meta["name"]), str(meta.get("namespace") or "default")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rendered = expand(minimal_vm(kind, name, namespace), index, kubevirt=kubevirt)
            launched = launch(rendered.vm, kubevirt, arch=architecture)
        except ExpandError as err:
            problems.append(f"{kind} {name}: left out: {err.status.get('message', '')}")
            continue
        requests = launched.pod.to_json()["total"]["requests"]
        prefix = key_prefix(kind, name, namespace)
        data[f"{prefix}.memory"] = str(parse_quantity(requests.get("memory", "0")).value_ceil())
        hugepages = sum(
            parse_quantity(q).value_ceil() for r, q in requests.items() if r.startswith(HUGEPAGES_PREFIX)
        )
        data[f"{prefix}.hugepages"] = str(hugepages)
        cpu = parse_quantity(requests.get("cpu", "0"))
        data[f"{prefix}.cpu"] = str(cpu.milli_value_ceil())
    return data, problems


def render(namespace: str, name: str, data: Mapping[str, str]) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {ASSUMPTION_ANNOTATION: ASSUMPTION, RESOURCES_ANNOTATION: RESOURCES_TEXT},
        },
        "data": dict(data),
    }
    header = "# Each instancetype's virt-launcher pod requests, written by `kubevirt-expand catalog sizes`.\n"
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=1 << 16)


run = exits_unusable(_run)
