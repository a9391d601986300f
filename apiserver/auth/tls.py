"""The serving TLS context: certificate and client CAs reloaded from disk without a restart.

A listening socket keeps the ``SSLContext`` it was created with, so rotation works one level down: every
context carries an SNI callback (OpenSSL calls it for every ClientHello, with or without a server name)
that moves the new connection onto the *current* context before the certificate is chosen. Connections
already established keep the context they were handshaken with, so nothing in flight is dropped.

Client certificates are requested but optional. Python's ``ssl`` cannot request a certificate without
verifying it, so OpenSSL verifies against the union of the client CA and the request-header CA (the
context is rebuilt whenever either changes) and the authenticators then decide, against the bundle
current at request time, which CA issued it. A certificate of neither CA fails the handshake; that
failure is logged with the CAs expected, since it is how a wrong front-proxy CA shows up.

Whether a certificate is *requested* at all cannot move with the context: OpenSSL copies the verify
mode into a connection when the listening context creates it, and switching contexts in the SNI
callback changes the certificate and the trust store but not that mode. The trust settings usually
arrive after the socket is listening (read from the ``extension-apiserver-authentication`` ConfigMap),
so with authentication on every context asks for a certificate from the start, even while no CA is
known yet; what a certificate is verified against is then always the current context's store.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from apiserver.auth.config import TrustSettings, TrustState
from apiserver.auth.filewatch import DEFAULT_POLL_INTERVAL, FileWatcher

log = logging.getLogger(__name__)

TLS_VERSIONS = {
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
# The TLS 1.2 suites Go's crypto/tls offers by default (a Go server such as kube-apiserver without
# --tls-cipher-suites; Go 1.22 and later): ECDHE key exchange only, with AES-GCM, ChaCha20-Poly1305 or
# AES-CBC with SHA-1. Not OpenSSL's CBC-SHA256/384 suites, which Go leaves out (Lucky13-style timing),
# nor static-RSA key exchange. TLS 1.3 suites are not set here (OpenSSL's defaults are Go's three).
TLS12_CIPHERS = ":".join(
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
        "ECDHE-ECDSA-AES128-SHA",
        "ECDHE-RSA-AES128-SHA",
        "ECDHE-ECDSA-AES256-SHA",
        "ECDHE-RSA-AES256-SHA",
    )
)


def serving_context(min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2) -> ssl.SSLContext:
    """A server-side context with kube-apiserver's TLS defaults: ``min_version`` or newer, Go's
    TLS 1.2 suites (:data:`TLS12_CIPHERS`), no renegotiation (one peer certificate per connection)."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = min_version
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.options |= ssl.OP_NO_RENEGOTIATION
    return ctx


class _Expectation:
    """What the handshake log says was expected; updated with the trust settings."""

    text = "no client CA configured"


class _LoggedSSLObject(ssl.SSLObject):
    """Logs why a handshake failed: asyncio keeps it to debug mode, but it is a support question.

    Also keeps the peer's certificate once read: its contexts refuse renegotiation, so after the
    handshake the certificate cannot change for the life of the connection.
    """

    expectation: _Expectation = _Expectation()
    peer_read = False
    peer_der: bytes | None = None

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLCertVerificationError as exc:
            log.warning(
                "TLS handshake refused: the client certificate did not verify (%s); client certificates must "
                "be signed by %s",
                exc.verify_message or exc.reason,
                self.expectation.text,
            )
            raise
        except ssl.SSLError as exc:
            log.info("TLS handshake failed: %s", exc.reason or exc)
            raise


class ServingTLS:
    """Builds, rebuilds and hands out the server's ``SSLContext``."""

    def __init__(
        self,
        cert_file: str,
        key_file: str,
        *,
        min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
        trust: TrustState | None = None,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
    ) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.min_version = min_version
        self._trust = trust
        self._verify_pem = b""
        self._expectation = _Expectation()
        self.generation = 0
        if trust is not None and trust.settings is not None:
            self._set_trust(trust.settings)
        self._current = self._build()  # raises at start-up: a server without its certificate cannot start
        self._watcher = FileWatcher([cert_file, key_file], self.reload, poll_interval=poll_interval)
        if trust is not None:
            trust.subscribe(self._on_trust)

    @property
    def context(self) -> ssl.SSLContext:
        """The context to listen with (any one works: each moves new connections to the current one)."""
        return self._current

    async def start(self) -> None:
        await self._watcher.start()
        if self._trust is not None and not self._trust.loaded:
            # Expected at every start (the ConfigMap is read in the background), and the one clue when
            # kube-apiserver is away: say once what callers meet until the trust settings arrive.
            _ready, why = self._trust.readiness()
            log.info(
                "TLS serving starts before the trust settings are known (%s): client certificates fail "
                "the handshake and other requests get 503 until they are read",
                why,
            )

    async def close(self) -> None:
        await self._watcher.close()

    async def reload(self) -> None:
        """Rebuild from the files; on error (a half-written rotation) keep serving the previous context."""
        try:
            new = self._build()
        except (OSError, ssl.SSLError, ValueError) as exc:
            log.error(
                "serving certificate %s not reloaded, keeping the previous one: %s", self.cert_file, exc
            )
            return
        self._current = new
        log.info("serving certificate reloaded from %s", self.cert_file)

    async def _on_trust(self, settings: TrustSettings) -> None:
        self._set_trust(settings)
        await self.reload()

    def _set_trust(self, settings: TrustSettings) -> None:
        self._verify_pem = settings.verify_pem()
        expected = []
        if settings.request_header is not None:
            expected.append(f"the request-header CA {settings.request_header.ca.describe()}")
        if settings.client_ca is not None:
            expected.append(f"the client CA {settings.client_ca.describe()}")
        self._expectation.text = " or ".join(expected) or "no CA (client certificates are not accepted)"

    def _build(self) -> ssl.SSLContext:
        ctx = serving_context(self.min_version)  # no renegotiation: one peer certificate (see peer_der)
        ctx.load_cert_chain(self.cert_file, self.key_file)
        if self._verify_pem:
            ctx.load_verify_locations(cadata=self._verify_pem.decode("ascii", "replace"))
        # Constant for the life of the listener (see the module docstring): with authentication on,
        # ask even while no CA is known, or no connection would ever be asked once one is.
        ctx.verify_mode = ssl.CERT_OPTIONAL if self._trust is not None else ssl.CERT_NONE
        ctx.set_alpn_protocols(["http/1.1"])
        ctx.sni_callback = self._sni
        expectation = self._expectation

        class _Logged(_LoggedSSLObject):
            pass

        _Logged.expectation = expectation
        ctx.sslobject_class = _Logged
        self.generation += 1
        return ctx

    def _sni(self, ssl_object: Any, _server_name: str | None, _ctx: ssl.SSLContext) -> None:
        current = self._current
        if ssl_object.context is not current:
            ssl_object.context = current


def peer_certificate_der(ssl_object: Any) -> bytes | None:
    """The DER of the client's certificate, when it sent one (already verified by the handshake);
    read once per connection from the server's own TLS objects, which cannot renegotiate."""
    if ssl_object is None:
        return None
    if getattr(ssl_object, "peer_read", False):
        return ssl_object.peer_der  # type: ignore[no-any-return]
    try:
        der = ssl_object.getpeercert(binary_form=True)
    except (ValueError, ssl.SSLError):
        return None
    found = bytes(der) if der else None
    if isinstance(ssl_object, _LoggedSSLObject) and ssl_object.context.options & ssl.OP_NO_RENEGOTIATION:
        ssl_object.peer_der = found
        ssl_object.peer_read = True
    return found
