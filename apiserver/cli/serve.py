"""The ``kubevirt-expand serve`` subcommand: run the aggregated API server."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import re
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from apiserver.auth import options as auth_options
from apiserver.cli import SERVE_HELP
from apiserver.cli.helpformat import KubeHelpFormatter
from apiserver.http.logging import FORMATS, configure
from apiserver.http.server import ServeError, Server, host_port, serve
from apiserver.http.settings import DEFAULT_GROUP, DEFAULT_VERSIONS, Settings
from apiserver.sources.base import Source

DESCRIPTION = """\
Serve GET .../namespaces/NS/virtualmachines/NAME/expand-spec and PUT .../namespaces/NS/expand-vm-spec
under /apis/GROUP/VERSION over HTTPS, as an aggregated Kubernetes API server (plus discovery, OpenAPI,
/livez, /readyz, /healthz and /metrics).

Objects come from a folder of manifests (--manifests DIR: VMs, instancetypes, preferences,
ControllerRevisions, presets, a KubeVirt CR; re-read when it changes) or, without --manifests, from the
cluster of the in-cluster config or kubeconfig.
"""

EPILOG = """\
examples:
  kubevirt-expand serve --manifests examples/
  curl -k https://127.0.0.1:8443/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/fedora/expand-spec
"""


def _versions(value: str) -> tuple[str, ...]:
    versions = tuple(v.strip() for v in value.split(",") if v.strip())
    if not versions:
        raise argparse.ArgumentTypeError("give at least one version, e.g. v1,v1alpha3")
    return versions


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return number


def _duration(value: str) -> float:
    """A positive Go duration as Kubernetes flags take them (``32s``, ``2m0s``, ``1m30s``, ``500ms``),
    or plain seconds."""
    seconds = auth_options.duration(value)
    if not seconds > 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return seconds


def _count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


_BINARY = {"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}


def _whole(value: str) -> int:
    """A count that may be 0 (off)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError("must be at least 0")
    return number


def _bytes(value: str) -> int:
    """A byte count as Kubernetes writes one: ``64Mi``, ``1Gi``, ``512Ki`` or plain bytes."""
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", value.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a byte count: {value!r} (e.g. 64Mi)")
    return int(match.group(1)) * _BINARY[match.group(2) or ""]


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError("must be between 0 and 65535")
    return port


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "serve",
        help=SERVE_HELP,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=KubeHelpFormatter,
    )
    objects = parser.add_argument_group("where objects come from")
    objects.add_argument(
        "--manifests",
        metavar="DIR",
        help="serve the objects in this folder of YAML/JSON manifests (re-read on change) "
        "instead of a cluster's",
    )
    cluster = parser.add_argument_group("cluster (without --manifests)")
    cluster.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig to read the cluster with; without it $KUBECONFIG, else the pod's in-cluster config",
    )
    cluster.add_argument(
        "--context", metavar="NAME", help="kubeconfig context to use; without it the current context"
    )
    cluster.add_argument(
        "--vm-cache",
        action="store_true",
        help="answer expand-spec from a watch cache of VirtualMachines instead of reading each VM fresh",
    )
    cluster.add_argument(
        "--kube-timeout",
        type=_positive,
        default=5.0,
        metavar="SECONDS",
        help="longest wait for one Kubernetes API read, TokenReview or SubjectAccessReview before answering "
        "503/504",
    )
    api = parser.add_argument_group("API")
    api.add_argument("--api-group", default=DEFAULT_GROUP, metavar="GROUP", help="API group to serve")
    api.add_argument(
        "--api-versions",
        type=_versions,
        default=DEFAULT_VERSIONS,
        metavar="V1,V2",
        help="comma-separated versions to serve, preferred first",
    )
    api.add_argument(
        "--kubevirt-error-codes",
        action="store_true",
        help="answer expand failures with virt-api's codes (GET 500 InternalError, PUT 400 BadRequest, "
        "missing VM 404 'virtualmachine.kubevirt.io') instead of 422 Invalid with field causes",
    )
    api.add_argument(
        "--request-timeout",
        type=_positive,
        default=60.0,
        metavar="SECONDS",
        help="answer 504 Timeout when a request takes longer",
    )
    tls = parser.add_argument_group("serving")
    tls.add_argument(
        "--bind-address",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="IP address to listen on (0.0.0.0 or :: for every interface)",
    )
    tls.add_argument(
        "--secure-port", type=_port, default=8443, metavar="PORT", help="HTTPS port (0: any free port)"
    )
    tls.add_argument(
        "--tls-cert-file",
        metavar="FILE",
        help="serving certificate (PEM, may include the chain), reloaded when it changes; without it a "
        "self-signed one in --cert-dir",
    )
    tls.add_argument("--tls-private-key-file", metavar="FILE", help="private key of --tls-cert-file (PEM)")
    tls.add_argument(
        "--cert-dir",
        default="apiserver.local.config/certificates",
        metavar="DIR",
        help="where a self-signed certificate is generated when --tls-cert-file is not given",
    )
    tls.add_argument(
        "--tls-sni",
        action="append",
        default=[],
        metavar="NAME",
        help="extra DNS name or IP for the self-signed certificate (repeatable), "
        "e.g. my-service.my-namespace.svc",
    )
    tls.add_argument(
        "--shutdown-timeout",
        type=_positive,
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM, how long requests in flight may take to finish",
    )
    defaults = Settings()
    tls.add_argument(
        "--read-header-timeout",
        type=_duration,
        default=defaults.header_timeout,
        metavar="DURATION",
        help="close a connection whose request line and headers have not all arrived this long after "
        "it opened (TLS handshake included) or after the first byte of its next request, as "
        f"k8s.io/apiserver's ReadHeaderTimeout (default {auth_options.go_duration(defaults.header_timeout)})",
    )
    tls.add_argument(
        "--idle-timeout",
        type=_duration,
        default=defaults.idle_timeout,
        metavar="DURATION",
        help="close a keep-alive connection idle this long; keep it above the 90s for which the "
        "aggregator keeps its idle connections, so that the aggregator closes first "
        f"(default {auth_options.go_duration(defaults.idle_timeout)})",
    )
    tls.add_argument(
        "--max-connections",
        type=_count,
        default=defaults.max_connections,
        metavar="N",
        help="most connections open at once, counted from their accept (TLS handshakes under way "
        "included); when full, a connection from a peer holding fewer takes the place of the largest "
        "holder's oldest idle one, else it is answered 503 ServiceUnavailable and closed (each idle TLS "
        "connection holds about 60 KB)",
    )
    tls.add_argument(
        "--tls-handshake-timeout",
        type=_duration,
        default=defaults.handshake_timeout,
        metavar="DURATION",
        help="close a connection whose TLS handshake has not ended this long after its accept (client-go "
        f"and the aggregator give up after 10s) (default {auth_options.go_duration(defaults.handshake_timeout)})",
    )
    tls.add_argument(
        "--max-tls-handshakes",
        type=_count,
        default=defaults.max_handshakes,
        metavar="N",
        help="most TLS handshakes under way at once (each about 50 KiB); when full, a connection from a "
        "peer with fewer under way takes the place of the largest holder's oldest, else it is closed",
    )
    tls.add_argument(
        "--health-probe-bind-address",
        default="",
        metavar="HOST:PORT",
        help="also answer /livez, /readyz and /healthz (only those) over plain HTTP here, with limits of "
        "its own, for the kubelet's probes: e.g. :8081 (unset by default: probes then use --secure-port)",
    )
    tls.add_argument(
        "--max-body-bytes-in-flight",
        type=_bytes,
        default=defaults.max_body_bytes_in_flight,
        metavar="BYTES",
        help="most bytes of PUT bodies held at once, each counted at its declared Content-Length (else "
        "3Mi) until its answer is sent, at most half of them by one caller (a user, else an address), "
        "and the last quarter only by callers holding none; a PUT over it is answered 429 TooManyRequests "
        "with Retry-After, as kube-apiserver answers requests over --max-requests-inflight (default 64Mi)",
    )
    tls.add_argument(
        "--max-watches",
        type=_count,
        default=0,
        metavar="N",
        help="most watches of expandedvirtualmachines held at once, each holding a connection; when all are "
        "taken, a user holding fewer takes the place of the largest holder's oldest watch, which ends as at "
        "its timeout (default half of --max-connections, so short requests always find a connection)",
    )
    tls.add_argument(
        "--max-watches-per-user",
        type=_count,
        default=defaults.max_watches_per_user,
        metavar="N",
        help="most watches one user (as authenticated; else one address) holds at once; more are answered "
        f"429 TooManyRequests with Retry-After (default {defaults.max_watches_per_user})",
    )
    tls.add_argument(
        "--max-pending-bodies",
        type=_count,
        default=0,
        metavar="N",
        help="most PUT bodies still arriving at once, each holding a connection; when all are taken, a user "
        "holding fewer takes the place of the largest holder's oldest, which is answered 429 (default a "
        "fifth of --max-connections)",
    )
    tls.add_argument(
        "--max-pending-bodies-per-user",
        type=_count,
        default=defaults.max_pending_bodies_per_user,
        metavar="N",
        help="most PUT bodies still arriving from one user at once; more are answered 429 "
        f"(default {defaults.max_pending_bodies_per_user})",
    )
    tls.add_argument(
        "--cpu-seats",
        type=_whole,
        default=defaults.cpu_seats,
        metavar="N",
        help="CPU-heavy steps of requests (parsing a body, a rendering pass, encoding an answer) the event "
        "loop runs per turn; steps beyond wait in a queue per user (all the ServiceAccounts of a namespace "
        "together) and are handed seats round-robin among users, so one user's burst waits behind its own "
        f"requests, not other users' (0: off, steps run in arrival order; default {defaults.cpu_seats})",
    )
    tls.add_argument(
        "--cpu-queue-per-user",
        type=_count,
        default=defaults.cpu_queue_per_user,
        metavar="N",
        help="most requests of one user (and of a namespace's ServiceAccounts together) waiting for a CPU "
        "seat; more are answered 429 TooManyRequests with Retry-After, as API Priority and Fairness "
        f"answers when a queue is full (default {defaults.cpu_queue_per_user})",
    )
    tls.add_argument(
        "--body-timeout",
        type=_duration,
        default=defaults.body_timeout,
        metavar="DURATION",
        help="a request body must arrive, and an answer over 64Ki be read, within this plus one second per "
        "--min-body-rate bytes; a slower body is answered 408 Timeout, a slower reader's connection closed "
        f"(default {auth_options.go_duration(defaults.body_timeout)})",
    )
    tls.add_argument(
        "--min-body-rate",
        type=_bytes,
        default=defaults.min_body_rate,
        metavar="BYTES",
        help="bytes per second a body must move at, beyond --body-timeout (default 64Ki: a 3Mi body has 58s)",
    )
    process = parser.add_argument_group("process")
    process.add_argument(
        "--gc-freeze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="once the objects are loaded, and again after a full garbage collection slower than 10 ms, "
        "move the surviving objects out of the garbage collector's reach (gc.freeze) so that its full "
        "collections do not pause the server for tens of milliseconds",
    )
    logs = parser.add_argument_group("logging")
    logs.add_argument(
        "--log-format",
        choices=FORMATS,
        default="text",
        help="log line format: text, or json (one object per line)",
    )
    logs.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="least severe level logged (debug adds successful probes, discovery and /metrics answers)",
    )
    auth_options.add_arguments(parser)
    parser.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> Settings:
    try:
        settings = _settings(args)
    except ValueError as err:  # flags that contradict each other
        raise ServeError(str(err)) from None
    if settings.health_probe_bind_address:
        host_port(settings.health_probe_bind_address)  # a ServeError naming the flag, before anything starts
    return settings


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        api_group=args.api_group,
        api_versions=tuple(args.api_versions),
        kubevirt_error_codes=args.kubevirt_error_codes,
        request_timeout=args.request_timeout,
        log_format=args.log_format,
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        cert_dir=args.cert_dir,
        tls_sni=tuple(args.tls_sni),
        shutdown_timeout=args.shutdown_timeout,
        header_timeout=args.read_header_timeout,
        idle_timeout=args.idle_timeout,
        max_connections=args.max_connections,
        handshake_timeout=args.tls_handshake_timeout,
        max_handshakes=args.max_tls_handshakes,
        health_probe_bind_address=args.health_probe_bind_address,
        max_body_bytes_in_flight=args.max_body_bytes_in_flight,
        body_timeout=args.body_timeout,
        min_body_rate=args.min_body_rate,
        max_watches=args.max_watches,
        max_watches_per_user=args.max_watches_per_user,
        max_pending_bodies=args.max_pending_bodies,
        max_pending_bodies_per_user=args.max_pending_bodies_per_user,
        cpu_seats=args.cpu_seats,
        cpu_queue_per_user=args.cpu_queue_per_user,
    )


def _source(args: argparse.Namespace) -> Source:
    if args.manifests:
        from apiserver.sources.folder import FolderSource

        directory = Path(args.manifests)
        if not directory.is_dir():
            raise ServeError(f"--manifests {args.manifests}: not a directory")
        return FolderSource(directory)
    try:
        cluster = importlib.import_module("apiserver.sources.cluster")
    except ModuleNotFoundError as err:
        if err.name != "apiserver.sources.cluster":
            raise
        raise ServeError(
            "reading objects from a cluster is not available in this build; "
            "give --manifests DIR to serve a folder of manifests"
        ) from None
    make = getattr(cluster, "source_from_args", None)
    if make is None:
        raise ServeError("the cluster source offers no source_from_args(args); give --manifests DIR")
    try:
        source: Source = make(args)
    except ValueError as err:
        raise ServeError(str(err)) from None
    return source


async def _serve_authenticated(
    settings: Settings, source: Source, options: auth_options.AuthOptions, kubeconfig: str | None
) -> None:
    """Load the cluster connections for reviews, keep the trust settings current, serve with the gate."""
    from apiserver.auth.tls import ServingTLS
    from apiserver.http.filters.authentication import Authentication
    from apiserver.http.metrics import Metrics
    from apiserver.http.server import certificate_files
    from apiserver.sources.base import Check
    from apiserver.sources.cluster.client import api_client, load_configuration

    try:
        authn = await load_configuration(options.authentication_kubeconfig or kubeconfig)
        authz = await load_configuration(options.authorization_kubeconfig or kubeconfig)
    except ValueError as err:
        raise ServeError(
            f"authentication is on and needs a cluster for TokenReview and SubjectAccessReview: {err} "
            "(give --authentication-kubeconfig/--authorization-kubeconfig or --kubeconfig)"
        ) from None
    runtime = auth_options.AuthRuntime(options, authn_api=api_client(authn), authz_api=api_client(authz))
    metrics = Metrics()
    if runtime.gate.reviewer is not None:
        metrics.watch_reviews("subjectaccessreviews", runtime.gate.reviewer.cache_figures)
    untrusted = runtime.gate.untrusted
    metrics.read_at_scrape(
        "untrusted_identity_headers",
        "Requests whose identity headers were ignored: sent by a peer without the front proxy's client "
        "certificate (each such peer is logged once).",
        lambda: untrusted.count,
        counter=True,
    )
    await runtime.start()
    try:
        cert, key = certificate_files(settings)
        try:
            tls = ServingTLS(str(cert), str(key), min_version=options.tls_min_version, trust=runtime.trust)
        except (OSError, ValueError) as err:
            raise ServeError(f"cannot load the serving certificate {cert} / {key}: {err}") from None
        await tls.start()
        try:
            await serve(
                Server(
                    settings,
                    source,
                    filters=[Authentication(runtime.gate)],
                    authentication=True,
                    ssl_context=tls.context,
                    checks=[lambda: [Check(auth_options.READINESS_CHECK, *runtime.readiness())]],
                    metrics=metrics,
                )
            )
        finally:
            await tls.close()
    finally:
        await runtime.close()


async def _with_gc_tuning(main: Coroutine[Any, Any, None], source: Source) -> None:
    """Run ``main`` with the long-lived heap frozen out of the garbage collector (see gctune)."""
    from apiserver.runtime.gctune import GCTuner

    tuner = GCTuner()
    tuner.install()
    task = asyncio.create_task(tuner.run(source), name="gc tuning")
    try:
        await main
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        tuner.uninstall()


def run(args: argparse.Namespace) -> int:
    configure(args.log_format, args.log_level)
    from apiserver.runtime.malloc import fix_mmap_threshold

    fix_mmap_threshold()  # large bodies' memory goes back to the system when they are done (malloc.py)
    try:
        settings = settings_from_args(args)
        options = auth_options.options_from_args(args)
        enabled = auth_options.authentication_enabled(
            options.authentication, folder_source=bool(args.manifests), bind_address=settings.bind_address
        )
        source = _source(args)
        if enabled:
            main = _serve_authenticated(settings, source, options, getattr(args, "kubeconfig", None))
        else:
            main = serve(Server(settings, source))
        asyncio.run(_with_gc_tuning(main, source) if args.gc_freeze else main)
    except auth_options.AuthConfigError as err:
        print(f"kubevirt-expand serve: {err}", file=sys.stderr)
        return 2
    except ServeError as err:
        print(f"kubevirt-expand serve: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - SIGINT before the loop took over
        return 130
    return 0
