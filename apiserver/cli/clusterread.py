"""Reading a cluster from the command line, as kubectl would: the current kubeconfig (``--kubeconfig``, else
``$KUBECONFIG``, else ``~/.kube/config``, else the pod's service account), its context, the caller's own
rights. Shared by ``catalog snapshot`` and ``resources --cluster``.

The cluster client's dependencies (aiohttp and kubernetes-asyncio: the ``cluster`` extra, which the
``server`` extra holds too) are imported only when a cluster is read: the base install runs every other
command without them, and says which extra to install when one is needed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# What the API server fills in, left out of a written object (it would change with every write).
SERVER_META = (
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


def exits_unusable(work: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A command's ``run`` from its work: a usage problem or a cluster it cannot read is one ``error:``
    line on stderr and exit 2 (what the reading commands share, folder or cluster)."""
    from apiserver.cli.inputs import UsageError
    from apiserver.cli.output import printable
    from apiserver.cli.report import EXIT_UNUSABLE

    def run(args: argparse.Namespace) -> int:
        try:
            return work(args)
        except (UsageError, ClusterReadError) as err:
            print(f"error: {printable(str(err))}", file=sys.stderr)
            return EXIT_UNUSABLE

    return run


class ClusterReadError(Exception):
    """The cluster cannot be read; ``str()`` is the one line to print."""


def missing_cluster_extra(module: str) -> str:
    """The line for a base install asked to read a cluster: which module is missing and which extra
    (``cluster``, the client alone; ``server`` holds it too) to install."""
    from apiserver.cli import CLUSTER_EXTRA

    return (
        f"reading a cluster needs the cluster client (no module {module!r}); "
        f"install it with: pip install '{CLUSTER_EXTRA}' (the server extra includes it)"
    )


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """``--kubeconfig``, ``--context`` and ``--request-timeout``, as kubectl names them."""
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use (default: its current)")
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="longest wait for one answer of the API server (default 30)",
    )


def kubeconfig_path(explicit: str | None) -> str | None:
    """As kubectl looks for it: the flag, $KUBECONFIG, ~/.kube/config; None for the pod's account."""
    if explicit:
        return explicit
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]
    home = Path.home() / ".kube" / "config"
    return str(home) if home.is_file() else None


def context_namespace(path: str | None, context: str | None) -> str | None:
    """The namespace the kubeconfig's context (``context`` or its current) names, as kubectl defaults
    ``-n`` to it; None where it names none or the file cannot be read (reading it fails later, then)."""
    if not path or os.pathsep in path:
        return None
    try:
        import yaml

        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, ImportError):
        return None
    if not isinstance(doc, dict):
        return None
    wanted = context or doc.get("current-context")
    for entry in doc.get("contexts") or ():
        if isinstance(entry, dict) and entry.get("name") == wanted:
            ns = (entry.get("context") or {}).get("namespace")
            return ns if isinstance(ns, str) and ns else None
    return None


def read_cluster(args: argparse.Namespace, reader: Callable[[Any], Awaitable[T]]) -> T:
    """Connect as ``args`` say (``kubeconfig``, ``context``, ``request_timeout``) and run ``reader`` with
    the client; every failure becomes a :class:`ClusterReadError` with one line to print."""
    path = kubeconfig_path(args.kubeconfig)
    if path and os.pathsep not in path and not Path(path).is_file():
        raise ClusterReadError(f"cannot load the cluster configuration: kubeconfig {path}: no such file")
    return asyncio.run(_connected(args, path, reader))


async def _connected(args: argparse.Namespace, path: str | None, reader: Callable[[Any], Awaitable[T]]) -> T:
    try:
        from apiserver.sources.base import SourceUnavailable
        from apiserver.sources.cluster.client import ApiError, KubeClient, load_configuration
    except ModuleNotFoundError as err:
        raise ClusterReadError(missing_cluster_extra(err.name or str(err))) from None

    try:
        config = await load_configuration(path, context=args.context)
    except ValueError as err:
        raise ClusterReadError(str(err)) from None
    client = KubeClient.from_configuration(config, read_timeout=args.request_timeout)
    try:
        return await reader(client)
    except ApiError as err:
        raise ClusterReadError(f"the Kubernetes API refused: {err} ({err.code} {err.reason})") from None
    except SourceUnavailable as err:
        raise ClusterReadError(str(err)) from None
    finally:
        await client.close()


async def list_objects(
    client: Any, path: str, api_version: str, kind: str, *, keep_status: bool = False
) -> list[dict[str, Any]]:
    """Every object of a list, page by page, typed, server-set metadata left out (``status`` too unless
    ``keep_status``), sorted by namespace and name."""
    found: list[dict[str, Any]] = []
    token = ""
    while True:
        query = {"limit": _PAGE, **({"continue": token} if token else {})}
        page = await client.get(path, query, verb="list")
        for item in page.get("items") or []:
            if isinstance(item, dict):
                found.append(clean(item, api_version, kind, keep_status=keep_status))
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            break
    found.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"].get("name", "")))
    return found


async def get_object(
    client: Any, path: str, api_version: str, kind: str, *, keep_status: bool = False
) -> dict[str, Any] | None:
    """One object, cleaned as :func:`list_objects` cleans them; None where it does not exist."""
    from apiserver.sources.cluster.client import ApiError

    try:
        obj = await client.get(path)
    except ApiError as err:
        if err.code == 404:
            return None
        raise
    return clean(obj, api_version, kind, keep_status=keep_status)


def clean(
    obj: Mapping[str, Any], api_version: str, kind: str, *, keep_status: bool = False
) -> dict[str, Any]:
    """The object as one would write it: type set, server-set metadata (and ``status``) left out."""
    meta = dict(obj.get("metadata") or {})
    for key in SERVER_META:
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
        if key not in ("apiVersion", "kind", "metadata") and (keep_status or key != "status"):
            out[key] = value
    return out
