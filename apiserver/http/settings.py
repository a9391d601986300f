"""Server options, fixed at start-up; one frozen value shared by every part of the application."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_GROUP = "subresources.kubevirt.io"
DEFAULT_VERSIONS = ("v1", "v1alpha3")
# k8s.io/apiserver's limit for a request body; KubeVirt's VM objects stay far below it.
DEFAULT_MAX_BODY = 3 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Settings:
    """What the HTTP application and the TLS listener need to know."""

    api_group: str = DEFAULT_GROUP
    # The first version is the preferred one in discovery.
    api_versions: tuple[str, ...] = DEFAULT_VERSIONS
    # Answer expand failures with KubeVirt's codes (GET 500, PUT 400) instead of 422/404.
    kubevirt_error_codes: bool = False
    request_timeout: float = 60.0
    max_body_bytes: int = DEFAULT_MAX_BODY
    log_format: str = "text"
    bind_address: str = "127.0.0.1"
    secure_port: int = 8443
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    cert_dir: str = "apiserver.local.config/certificates"
    tls_sni: tuple[str, ...] = field(default_factory=tuple)
    # How long SIGTERM waits for requests in flight before closing their connections.
    shutdown_timeout: float = 30.0
    # Connection limits (see apiserver/http/transport/connections.py for why these defaults).
    header_timeout: float = 32.0
    idle_timeout: float = 120.0
    max_connections: int = 1000
    # A TLS handshake must end within this (client-go's and the aggregator's own limit is 10 s), and at
    # most this many are under way at once (connections.py).
    handshake_timeout: float = 10.0
    max_handshakes: int = 250
    # ``HOST:PORT`` of a plain-HTTP listener answering only /livez, /readyz and /healthz for the
    # kubelet's probes, with limits of its own (empty: none; probes then use the API port).
    health_probe_bind_address: str = ""
    # Bytes of PUT bodies held at once (each counted at its declared length, else max_body_bytes, until
    # its answer is sent), at most half of them by one caller (budget.py).
    max_body_bytes_in_flight: int = 64 * 1024 * 1024
    # A request body, or a large answer, must move within body_timeout seconds plus one second per
    # min_body_rate bytes (budget.BodyPace).
    body_timeout: float = 10.0
    min_body_rate: int = 64 * 1024
    # Long-running requests take places of their own, per user and in all (shares.py): watches, and PUT
    # bodies still arriving. 0 for the totals: half and a fifth of max_connections, so that short
    # requests always find a connection.
    max_watches: int = 0
    max_watches_per_user: int = 100
    max_pending_bodies: int = 0
    max_pending_bodies_per_user: int = 16
    # CPU-heavy steps of requests run per turn of the event loop, handed round-robin among people
    # waiting (seats.py; 0: off), and requests a person may have waiting for one (beyond: 429).
    cpu_seats: int = 1
    cpu_queue_per_user: int = 50

    def __post_init__(self) -> None:
        if not self.api_versions:
            raise ValueError("at least one API version must be served")
        if self.request_timeout <= 0:
            raise ValueError("the request timeout must be positive")
        if self.header_timeout <= 0 or self.idle_timeout <= 0:
            raise ValueError("the header and idle timeouts must be positive")
        if self.max_body_bytes_in_flight < self.max_body_bytes:
            raise ValueError("the bytes of bodies in flight must allow at least one body of the limit")
        if self.max_connections < 1 or self.max_handshakes < 1:
            raise ValueError("at least one connection and one TLS handshake must be allowed")
        if self.handshake_timeout <= 0:
            raise ValueError("the TLS handshake timeout must be positive")
        if self.body_timeout <= 0 or self.min_body_rate < 1:
            raise ValueError("the body timeout and the minimum body rate must be positive")
        if min(self.max_watches_per_user, self.max_pending_bodies_per_user) < 1:
            raise ValueError("each user must be allowed at least one watch and one pending body")
        if self.cpu_seats < 0 or self.cpu_queue_per_user < 1:
            raise ValueError("CPU seats must not be negative, and each user may queue at least one request")
        if min(self.max_watches, self.max_pending_bodies) < 0:
            raise ValueError("the most watches and pending bodies must not be negative")
        if (self.max_watches or self.max_pending_bodies) and (
            self.watch_places + self.pending_body_places >= self.max_connections
        ):
            raise ValueError(
                f"--max-watches ({self.watch_places}) and --max-pending-bodies ({self.pending_body_places}) "
                "must leave connections for short requests: together under --max-connections "
                f"({self.max_connections})"
            )

    @property
    def watch_places(self) -> int:
        """``max_watches``, or half of ``max_connections``."""
        return self.max_watches or max(1, self.max_connections // 2)

    @property
    def pending_body_places(self) -> int:
        """``max_pending_bodies``, or a fifth of ``max_connections``."""
        return self.max_pending_bodies or max(1, self.max_connections // 5)
