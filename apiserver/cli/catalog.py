"""``kubevirt-expand catalog snapshot``: write what a cluster holds that VMs name, for ``expand --catalog``.

A catalog is what a GitOps repository's VMs use without holding it: the cluster's
VirtualMachineClusterInstancetypes and VirtualMachineClusterPreferences (common-instancetypes' ``u1.medium``
and ``fedora``, say), the instancetypes and preferences of the namespaces given, and the KubeVirt CR (its
configuration: feature gates, defaults). The snapshot reads them through the current kubeconfig, as
kubectl would (``--kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``, else the pod's service
account), with the caller's own rights, and writes them as multi-document YAML in a stable order with
what the API server fills in itself (``uid``, ``resourceVersion``, ``managedFields``, ``status``, ...)
left out, so that a snapshot kept in git changes only when the catalog does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from apiserver.cli.helpformat import KubeHelpFormatter
from apiserver.cli.report import EXIT_ADMITTED, EXIT_UNUSABLE
from apiserver.render.objects import (
    CLUSTER_INSTANCETYPE,
    CLUSTER_PREFERENCE,
    INSTANCETYPE,
    INSTANCETYPE_GROUP,
    KUBEVIRT,
    PREFERENCE,
)

EXAMPLES = """\
examples:
  # The cluster's instancetypes, preferences and KubeVirt CR, and those of namespace team-a
  kubevirt-expand catalog snapshot -n team-a -o catalog.yaml

  # Then judge a repository's VMs against it
  kubevirt-expand expand -f vms/ --catalog catalog.yaml --validate --check

exit status:
  0  the snapshot was written
  2  it could not be: no cluster configuration, the cluster unreachable, no instancetype API, a list
     refused (each with one error line); nothing is written then
"""

# (kind, plural) of what a snapshot holds, in the order it writes them.
CLUSTER_KINDS = (
    (CLUSTER_INSTANCETYPE, "virtualmachineclusterinstancetypes"),
    (CLUSTER_PREFERENCE, "virtualmachineclusterpreferences"),
)
NAMESPACED_KINDS = (
    (INSTANCETYPE, "virtualmachineinstancetypes"),
    (PREFERENCE, "virtualmachinepreferences"),
)
KUBEVIRT_PATH = "/apis/kubevirt.io/v1/kubevirts"

# What the API server fills in, left out of a snapshot (it would change with every write).
_SERVER_META = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "ownerReferences",
    "finalizers",
)
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_PAGE = "500"


class SnapshotError(Exception):
    """The snapshot cannot be taken; ``str()`` is the one line to print."""


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "catalog",
        help="write a cluster's instancetypes, preferences and KubeVirt CR to a file (for expand --catalog)",
        description="Catalogs: what a cluster holds that VMs reference, for expand --catalog.",
        formatter_class=KubeHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    snapshot = actions.add_parser(
        "snapshot",
        help="write the current cluster's catalog as YAML",
        description=(
            "Read the cluster's VirtualMachineClusterInstancetypes and VirtualMachineClusterPreferences, "
            "the VirtualMachineInstancetypes and VirtualMachinePreferences of each -n namespace, and the "
            "KubeVirt CR, through the current kubeconfig, and write them as multi-document YAML, server-"
            "set fields (uid, resourceVersion, managedFields, status) left out, in a stable order."
        ),
        epilog=EXAMPLES,
        formatter_class=KubeHelpFormatter,
    )
    snapshot.add_argument(
        "-o", "--output", default="-", metavar="FILE", help="where to write it (default: stdout)"
    )
    snapshot.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="also take this namespace's own instancetypes and preferences; repeatable",
    )
    snapshot.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account)",
    )
    snapshot.add_argument(
        "--context", metavar="NAME", help="kubeconfig context to use (default: its current)"
    )
    snapshot.add_argument(
        "--no-kubevirt", action="store_true", help="leave the KubeVirt CR out (its defaults then apply)"
    )
    snapshot.add_argument(
        "--request-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="longest wait for one answer of the API server (default 30)",
    )
    snapshot.set_defaults(func=run_snapshot)


def run_snapshot(args: argparse.Namespace) -> int:
    try:
        path = _kubeconfig(args.kubeconfig)
        if path and os.pathsep not in path and not Path(path).is_file():
            raise SnapshotError(f"cannot load the cluster configuration: kubeconfig {path}: no such file")
        objects, notes = asyncio.run(_take(args, path))
        text = render(objects)
        _write(args.output, text)
    except SnapshotError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_UNUSABLE
    for note in notes:
        print(note, file=sys.stderr)
    where = "stdout" if args.output == "-" else args.output
    print(f"catalog: wrote {describe(objects)} to {where}", file=sys.stderr)
    return EXIT_ADMITTED


def _kubeconfig(explicit: str | None) -> str | None:
    """As kubectl looks for it: the flag, $KUBECONFIG, ~/.kube/config; None for the pod's account."""
    if explicit:
        return explicit
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]
    home = Path.home() / ".kube" / "config"
    return str(home) if home.is_file() else None


async def _take(args: argparse.Namespace, path: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    # The cluster client's dependencies are imported only here: `expand` never needs them, and the base
    # install (without the server extra) does not have them.
    try:
        from apiserver.sources.base import SourceUnavailable
        from apiserver.sources.cluster.client import ApiError, KubeClient, load_configuration
    except ModuleNotFoundError as err:
        from apiserver.cli import SERVER_EXTRA

        raise SnapshotError(
            f"reading a cluster needs the server's dependencies (no module {err.name!r}); "
            f"install them with: pip install '{SERVER_EXTRA}'"
        ) from None

    try:
        config = await load_configuration(path, context=args.context)
    except ValueError as err:
        raise SnapshotError(str(err)) from None
    client = KubeClient.from_configuration(config, read_timeout=args.request_timeout)
    try:
        return await _read(client, args)
    except ApiError as err:
        raise SnapshotError(f"the Kubernetes API refused: {err} ({err.code} {err.reason})") from None
    except SourceUnavailable as err:
        raise SnapshotError(str(err)) from None
    finally:
        await client.close()


async def _read(client: Any, args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str]]:
    from apiserver.sources.cluster.client import ApiError

    notes: list[str] = []
    try:
        group = await client.get(f"/apis/{INSTANCETYPE_GROUP}", verb="discovery")
    except ApiError as err:
        if err.code == 404:
            raise SnapshotError(
                f"the cluster serves no {INSTANCETYPE_GROUP} API: is KubeVirt installed?"
            ) from None
        raise
    version = str(
        (group.get("preferredVersion") or {}).get("groupVersion") or f"{INSTANCETYPE_GROUP}/v1beta1"
    )
    objects: list[dict[str, Any]] = []
    if not args.no_kubevirt:
        try:
            crs = await _list(client, KUBEVIRT_PATH, "kubevirt.io/v1", KUBEVIRT)
        except ApiError as err:
            if err.code not in (403, 404):
                raise
            crs = []
            notes.append(f"Warning: no KubeVirt CR in the catalog: {err} ({err.code})")
        if not crs and not notes:
            notes.append("Warning: the cluster has no KubeVirt CR: the catalog has none (defaults apply)")
        objects.extend(crs[:1])
        if len(crs) > 1:
            notes.append(f"Warning: {len(crs)} KubeVirt CRs; the catalog holds the first only")
    for kind, plural in CLUSTER_KINDS:
        objects.extend(await _list(client, f"/apis/{version}/{plural}", version, kind))
    for namespace in dict.fromkeys(args.namespace):
        for kind, plural in NAMESPACED_KINDS:
            path = f"/apis/{version}/namespaces/{namespace}/{plural}"
            objects.extend(await _list(client, path, version, kind))
    return objects, notes


async def _list(client: Any, path: str, api_version: str, kind: str) -> list[dict[str, Any]]:
    """Every object of a list, page by page, cleaned and sorted by namespace and name."""
    found: list[dict[str, Any]] = []
    token = ""
    while True:
        query = {"limit": _PAGE, **({"continue": token} if token else {})}
        page = await client.get(path, query, verb="list")
        for item in page.get("items") or []:
            if isinstance(item, dict):
                found.append(clean(item, api_version, kind))
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            break
    found.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"].get("name", "")))
    return found


def clean(obj: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """The object as one would write it: type set, server-set metadata and status left out."""
    meta = dict(obj.get("metadata") or {})
    for key in _SERVER_META:
        meta.pop(key, None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and _LAST_APPLIED in annotations:
        annotations = {k: v for k, v in annotations.items() if k != _LAST_APPLIED}
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations")
    out: dict[str, Any] = {
        "apiVersion": obj.get("apiVersion") or api_version,
        "kind": obj.get("kind") or kind,
        "metadata": meta,
    }
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = value
    return out


def describe(objects: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for obj in objects:
        counts[str(obj["kind"])] = counts.get(str(obj["kind"]), 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "nothing (the cluster holds no catalog)"


def render(objects: Sequence[Mapping[str, Any]]) -> str:
    header = (
        "# A cluster's catalog for `kubevirt-expand expand --catalog`, written by `kubevirt-expand catalog "
        "snapshot`.\n"
    )
    if not objects:
        return header
    return header + yaml.safe_dump_all(
        objects, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16
    )


def _write(output: str, text: str) -> None:
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(output)
    tmp = ""
    try:
        # Written whole or not at all: a CI job never reads half a catalog.
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as err:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        raise SnapshotError(f"{output}: cannot write: {err.strerror or err}") from None
