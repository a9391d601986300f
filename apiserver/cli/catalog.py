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
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from apiserver.cli.clusterread import ClusterReadError, add_connection_flags, list_objects, read_cluster
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

LIST_EXAMPLES = """\
examples:
  # What is bundled
  kubevirt-expand catalog list

  # Judge VMs against the newest bundled common-instancetypes, or a given release
  kubevirt-expand expand -f vms/ --catalog common-instancetypes --check
  kubevirt-expand expand -f vms/ --catalog common-instancetypes@v1.6.0 --check
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

# The snapshot cannot be taken; ``str()`` is the one line to print.
SnapshotError = ClusterReadError


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
            "set fields (uid, resourceVersion, managedFields, status) left out, in a stable order. "
            "Needs the cluster extra: pip install 'kubevirt-expand-apiserver[cluster]'."
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
        "--no-kubevirt", action="store_true", help="leave the KubeVirt CR out (its defaults then apply)"
    )
    add_connection_flags(snapshot)
    snapshot.set_defaults(func=run_snapshot)
    listing = actions.add_parser(
        "list",
        help="list the catalogs shipped with kubevirt-expand (for --catalog NAME, offline)",
        description=(
            "List the catalogs bundled with kubevirt-expand: common-instancetypes' releases (the cluster "
            "instancetypes and preferences virt-operator deploys), each usable offline as "
            "--catalog NAME@VERSION, the newest as --catalog NAME."
        ),
        epilog=LIST_EXAMPLES,
        formatter_class=KubeHelpFormatter,
    )
    listing.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="text (a table) or json"
    )
    listing.set_defaults(func=run_list)
    from apiserver.cli import sizes

    sizes.add_parser(actions)


def run_snapshot(args: argparse.Namespace) -> int:
    try:
        objects, notes = read_cluster(args, lambda client: _read(client, args))
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


def run_list(args: argparse.Namespace) -> int:
    """``catalog list``: what ``--catalog NAME`` can name, newest first."""
    from apiserver.cli import bundled

    found = bundled.releases()
    if args.output == "json":
        items = [
            {
                "catalog": r.label,
                "name": r.name,
                "version": r.version,
                "date": r.date,
                "commit": r.commit,
                "instancetypes": r.instancetypes,
                "preferences": r.preferences,
                "source": r.source,
                "license": r.license,
                "newest": r is found[0],
            }
            for r in found
        ]
        text = json.dumps({"items": items}, indent=2) + "\n"
    else:
        rows = [("CATALOG", "RELEASED", "INSTANCETYPES", "PREFERENCES", "COMMIT")]
        rows.extend((r.label, r.date, str(r.instancetypes), str(r.preferences), r.commit[:12]) for r in found)
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        newest = found[0]
        lines.append(
            f"--catalog {newest.name} is {newest.label}, the newest; {newest.license}, from {newest.source}"
        )
        text = "\n".join(lines) + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (| head): quiet at exit too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_ADMITTED


async def _read(client: Any, args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str]]:
    return await read_catalog_objects(
        client, args.namespace, kubevirt=not args.no_kubevirt, what="the catalog", need_instancetypes=True
    )


async def read_catalog_objects(
    client: Any,
    namespaces: Sequence[str],
    *,
    kubevirt: bool = True,
    what: str = "the catalog",
    need_instancetypes: bool = True,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The KubeVirt CR (the first; ``kubevirt``), the cluster's instancetypes and preferences and those of
    ``namespaces``, and the warnings to print. Without the instancetype API, raises
    :class:`ClusterReadError` when ``need_instancetypes``, else reads none."""
    from apiserver.sources.cluster.client import ApiError

    notes: list[str] = []
    objects: list[dict[str, Any]] = []
    if kubevirt:
        try:
            crs = await list_objects(client, KUBEVIRT_PATH, "kubevirt.io/v1", KUBEVIRT)
        except ApiError as err:
            if err.code not in (403, 404):
                raise
            crs = []
            notes.append(f"Warning: no KubeVirt CR in {what}: {err} ({err.code})")
        if not crs and not notes:
            notes.append(f"Warning: the cluster has no KubeVirt CR: {what} has none (defaults apply)")
        objects.extend(crs[:1])
        if len(crs) > 1:
            notes.append(f"Warning: {len(crs)} KubeVirt CRs; {what} holds the first only")
    try:
        group = await client.get(f"/apis/{INSTANCETYPE_GROUP}", verb="discovery")
    except ApiError as err:
        if err.code != 404:
            raise
        if need_instancetypes:
            raise SnapshotError(
                f"the cluster serves no {INSTANCETYPE_GROUP} API: is KubeVirt installed?"
            ) from None
        return objects, notes
    version = str(
        (group.get("preferredVersion") or {}).get("groupVersion") or f"{INSTANCETYPE_GROUP}/v1beta1"
    )
    for kind, plural in CLUSTER_KINDS:
        objects.extend(await list_objects(client, f"/apis/{version}/{plural}", version, kind))
    for namespace in dict.fromkeys(namespaces):
        for kind, plural in NAMESPACED_KINDS:
            path = f"/apis/{version}/namespaces/{namespace}/{plural}"
            objects.extend(await list_objects(client, path, version, kind))
    return objects, notes


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
