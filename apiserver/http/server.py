"""Serving the application over TLS, and shutting down gracefully.

The serving certificate comes from ``--tls-cert-file``/``--tls-private-key-file`` or is generated,
self-signed, into ``--cert-dir`` (reused while it is valid and covers the names). SIGTERM marks the
server not ready, stops accepting connections, lets requests in flight finish (up to the shutdown
timeout), then closes the source.

With ``--health-probe-bind-address`` a second listener, plain HTTP, answers the kubelet's probes
(``/livez``, ``/readyz``, ``/healthz``) and nothing else, with connection limits of its own: however many
connections hold the API port, the probes are answered, and the replica is neither restarted nor taken
out of its Service for it (cert-manager's webhook and controller-runtime's managers have such a port).
The manifests leave that port out of the NetworkPolicy: traffic from the pod's own node (the kubelet)
is always allowed, other pods cannot reach it.
"""

from __future__ import annotations

import asyncio
import datetime
import errno
import ipaddress
import logging
import signal
import ssl
from collections.abc import Iterable
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from apiserver.auth.tls import serving_context
from apiserver.http.app import build_app, build_probe_app
from apiserver.http.filters import Filter
from apiserver.http.keys import METRICS, PIPELINE
from apiserver.http.metrics import Metrics
from apiserver.http.settings import Settings
from apiserver.http.state import ChecksFn, ServerState
from apiserver.http.transport.budget import BodyPace
from apiserver.http.transport.connections import ConnectionLimits, ConnectionTable, GuardedSite
from apiserver.sources.base import Source

_log = logging.getLogger(__name__)

CERT_NAME = "apiserver.crt"
KEY_NAME = "apiserver.key"
_VALIDITY = datetime.timedelta(days=365)
_RENEW_BEFORE = datetime.timedelta(days=7)
# The probe listener's limits: a kubelet sends its request at once and closes the connection after the
# answer (its probes disable keep-alive), a few per period.
PROBE_LIMITS = ConnectionLimits(header_timeout=5.0, idle_timeout=5.0, max_connections=64)


class ServeError(Exception):
    """The server cannot start as configured; the message says why."""


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def check_bind_address(address: str, *, authentication: bool) -> None:
    """Refuse to expose an unauthenticated server beyond this machine."""
    if not authentication and not is_loopback(address):
        raise ServeError(
            f"refusing to listen on {address}: request authentication is not configured, so anyone who "
            "can reach the port could read VirtualMachines; bind to 127.0.0.1 (the default) or configure "
            "authentication"
        )


def host_port(text: str, flag: str = "--health-probe-bind-address") -> tuple[str | None, int]:
    """``HOST:PORT``, ``:PORT`` (every interface) or ``[IPv6]:PORT``, as Go's net.SplitHostPort reads it."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ServeError(f"{flag} {text}: give HOST:PORT, e.g. :8081 or 0.0.0.0:8081")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return (host or None), int(port)


def self_signed_names(settings: Settings) -> list[str]:
    names = ["localhost", "127.0.0.1", *settings.tls_sni]
    if not is_loopback(settings.bind_address) and settings.bind_address not in ("0.0.0.0", "::"):
        names.append(settings.bind_address)
    return list(dict.fromkeys(names))


def _san(names: Iterable[str]) -> list[x509.GeneralName]:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return entries


def _still_good(cert_path: Path, names: list[str]) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, x509.ExtensionNotFound):
        return False
    if cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC) < _RENEW_BEFORE:
        return False
    return set(_san(names)) <= set(san)


def generate_self_signed(cert_dir: Path, names: list[str]) -> tuple[Path, Path]:
    """A self-signed certificate for ``names`` (usable as its own CA by clients), and its key."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = cert_dir / CERT_NAME, cert_dir / KEY_NAME
    if cert_path.exists() and key_path.exists() and _still_good(cert_path, names):
        return cert_path, key_path
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{names[0]}@{int(now.timestamp())}")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(_san(names)), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    key_path.touch(mode=0o600)
    key_path.write_bytes(key_bytes)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _log.info("generated a self-signed serving certificate for %s in %s", ", ".join(names), cert_dir)
    return cert_path, key_path


def certificate_files(settings: Settings) -> tuple[Path, Path]:
    if settings.tls_cert_file or settings.tls_private_key_file:
        if not (settings.tls_cert_file and settings.tls_private_key_file):
            raise ServeError("--tls-cert-file and --tls-private-key-file must be given together")
        return Path(settings.tls_cert_file), Path(settings.tls_private_key_file)
    return generate_self_signed(Path(settings.cert_dir), self_signed_names(settings))


def server_ssl_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """TLS 1.2 or newer, kube-apiserver's suites, with the serving certificate (without authentication;
    with it, :class:`apiserver.auth.tls.ServingTLS` builds the context)."""
    context = serving_context()
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as err:
        raise ServeError(f"cannot load the serving certificate {cert_file} / {key_file}: {err}") from None
    return context


class Server:
    """One running listener; ``start`` binds, ``stop`` shuts down gracefully."""

    def __init__(
        self,
        settings: Settings,
        source: Source,
        *,
        filters: Iterable[Filter] = (),
        authentication: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        checks: Iterable[ChecksFn] = (),
        dispatch: bool = True,
        metrics: Metrics | None = None,
    ) -> None:
        """``filters``: authentication, authorization and the scope (apiserver.http.filters), run in
        order before every endpoint. ``dispatch=False`` routes the expand endpoints through aiohttp's
        router like every other path, instead of :mod:`apiserver.http.routing` (tests compare the two)."""
        check_bind_address(settings.bind_address, authentication=authentication)
        self.settings = settings
        self.state = ServerState()
        self.app = build_app(
            settings,
            source,
            filters=filters,
            state=self.state,
            checks=checks,
            metrics=metrics,
        )
        self._ssl = ssl_context
        self._dispatch = dispatch
        self._runner: web.AppRunner | None = None
        self._probe_runner: web.AppRunner | None = None
        self.site: GuardedSite | None = None
        self.port = 0
        self.probe_port: int | None = None

    async def start(self) -> None:
        context = self._ssl or server_ssl_context(*certificate_files(self.settings))
        runner = web.AppRunner(
            self.app, access_log=None, shutdown_timeout=self.settings.shutdown_timeout, handle_signals=False
        )
        await runner.setup()
        self.app[PIPELINE].install(runner, dispatch=self._dispatch)
        settings = self.settings
        limits = ConnectionLimits(
            settings.header_timeout,
            settings.idle_timeout,
            settings.max_connections,
            settings.handshake_timeout,
            settings.max_handshakes,
            BodyPace(settings.body_timeout, settings.min_body_rate),
        )
        site = GuardedSite(
            runner, settings.bind_address, settings.secure_port, ssl_context=context, limits=limits
        )
        self.site = site
        try:
            await _start_site(site, f"{settings.bind_address}:{settings.secure_port}", "--secure-port")
        except ServeError:
            await runner.cleanup()
            raise
        self._runner = runner
        _export_connections(self.app[METRICS], site.table)
        address = runner.addresses[0]
        self.port = int(address[1])
        _log.info("serving on https://%s:%d", self.settings.bind_address, self.port)
        if settings.health_probe_bind_address:
            try:
                await self._start_probes(settings.health_probe_bind_address)
            except ServeError:
                await self.stop()
                raise

    async def _start_probes(self, address: str) -> None:
        host, port = host_port(address)
        runner = web.AppRunner(build_probe_app(self.app), access_log=None, handle_signals=False)
        await runner.setup()
        site = GuardedSite(runner, host, port, limits=PROBE_LIMITS)
        try:
            await _start_site(site, address, "--health-probe-bind-address")
        except ServeError:
            await runner.cleanup()
            raise
        self._probe_runner = runner
        self.probe_port = int(runner.addresses[0][1])
        _log.info("answering the kubelet's probes on http://%s:%d", host or "0.0.0.0", self.probe_port)

    async def stop(self) -> None:
        """Stop accepting, finish requests in flight, close the source."""
        if self._runner is None:
            return
        self.state.shutting_down = True
        runner, self._runner = self._runner, None
        await runner.cleanup()
        if self._probe_runner is not None:  # answered (not ready, alive) until the API port has drained
            probes, self._probe_runner = self._probe_runner, None
            await probes.cleanup()
        _log.info("server stopped")


def _export_connections(metrics: Metrics, table: ConnectionTable) -> None:
    metrics.read_at_scrape(
        "connections_open", "Connections of the API port, counted from their accept.", lambda: table.open
    )
    metrics.read_at_scrape(
        "tls_handshakes", "Connections of the API port in their TLS handshake.", lambda: table.handshakes.size
    )
    metrics.read_at_scrape(
        "connections_refused",
        "Connections closed at their accept for want of a place (--max-connections, --max-tls-handshakes).",
        lambda: table.refused,
        counter=True,
    )
    metrics.read_at_scrape(
        "connections_displaced",
        "Connections of the peer holding the most places closed to make room for another peer's.",
        lambda: table.displaced,
        counter=True,
    )


async def _start_site(site: GuardedSite, where: str, flag: str) -> None:
    try:
        await site.start()
    except OSError as err:
        hint = ""
        if err.errno == errno.EADDRINUSE:
            # What a newcomer meets when a second server (or another program) holds the port.
            hint = f"; stop what listens there or choose another port with {flag}"
        raise ServeError(f"cannot listen on {where}: {err.strerror or err}{hint}") from None


async def serve(server: Server) -> None:
    """Run ``server`` until SIGTERM or SIGINT, then shut down gracefully."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    try:
        await stop.wait()
        _log.info("shutting down: finishing requests in flight")
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await server.stop()
