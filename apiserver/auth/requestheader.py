"""Front-proxy (request-header) authentication: the identity the aggregator forwards in headers.

The ``X-Remote-*`` headers are anyone's to send; they are believed only when the TLS peer proved, with a
client certificate issued by the request-header CA and a common name on the allowed list, that it is the
aggregator. Headers ignored are counted, and logged once per peer with what was expected
(:class:`UntrustedHeaders`), because a front-proxy CA that differs from kube-apiserver's is the most
common reason an aggregated server answers 401 to everything; once, because anyone who can reach the
port can send them, to the open health paths too, and a line per request would let them fill the log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote

from cryptography import x509

from apiserver.auth.certs import CABundle, Window, client_certificate_check, common_name
from apiserver.auth.identity import UserInfo

log = logging.getLogger(__name__)

DEFAULT_USERNAME_HEADERS = ("X-Remote-User",)
DEFAULT_GROUP_HEADERS = ("X-Remote-Group",)
DEFAULT_EXTRA_PREFIXES = ("X-Remote-Extra-",)
# Read only when configured: older aggregators pass a client's own X-Remote-Uid through unchanged.
DEFAULT_UID_HEADERS: tuple[str, ...] = ()


class Headers(Protocol):
    """Case-insensitive multi-valued headers (aiohttp's CIMultiDict, or a test double)."""

    def getall(self, key: str, default: list[str]) -> list[str]: ...

    def __iter__(self) -> Iterator[str]: ...


@dataclass(frozen=True, slots=True)
class RequestHeaderConfig:
    """Trust settings for the front proxy (``requestheader-*`` of extension-apiserver-authentication)."""

    ca: CABundle
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = DEFAULT_USERNAME_HEADERS
    uid_headers: tuple[str, ...] = DEFAULT_UID_HEADERS
    group_headers: tuple[str, ...] = DEFAULT_GROUP_HEADERS
    extra_prefixes: tuple[str, ...] = DEFAULT_EXTRA_PREFIXES

    def expectation(self) -> str:
        names = ", ".join(repr(n) for n in self.allowed_names) if self.allowed_names else "any common name"
        return (
            f"a client certificate signed by the request-header CA {self.ca.describe()} with CN in ({names})"
        )


def _identity_names(config: RequestHeaderConfig | None) -> tuple[set[str], list[str]]:
    """(exact names, prefixes), lower-case, of the headers that carry identity under ``config``."""
    exact = {h.lower() for h in (*DEFAULT_USERNAME_HEADERS, *DEFAULT_GROUP_HEADERS, "X-Remote-Uid")}
    prefixes = [p.lower() for p in DEFAULT_EXTRA_PREFIXES]
    if config is not None:
        exact |= {h.lower() for h in (*config.username_headers, *config.uid_headers, *config.group_headers)}
        prefixes += [p.lower() for p in config.extra_prefixes]
    return exact, prefixes


def identity_header_names(config: RequestHeaderConfig | None, present: Iterable[str]) -> list[str]:
    """Every header in ``present`` that carries identity: these are removed from every request."""
    exact, prefixes = _identity_names(config)
    found = []
    for name in present:
        low = name.lower()
        if low in exact or any(low.startswith(p) for p in prefixes):
            found.append(name)
    return found


RawHeaders = tuple[tuple[bytes, bytes], ...]


class CredentialFilter:
    """Picks, from headers as sent, every one a decision can depend on: the identity headers (as
    ``identity_header_names`` names them) and ``Authorization``."""

    __slots__ = ("_exact", "_prefixes")

    def __init__(self, config: RequestHeaderConfig | None) -> None:
        exact, prefixes = _identity_names(config)
        self._exact = frozenset(n.encode("utf-8") for n in (*exact, "authorization"))
        self._prefixes = tuple(p.encode("utf-8") for p in prefixes)

    def __call__(self, raw: RawHeaders) -> RawHeaders:
        exact, prefixes = self._exact, self._prefixes
        return tuple(pair for pair in raw if (low := pair[0].lower()) in exact or low.startswith(prefixes))


def _first_value(headers: Headers, names: Sequence[str]) -> str:
    for name in names:
        for value in headers.getall(name, []):
            if value:
                return value
    return ""


def _all_values(headers: Headers, names: Sequence[str]) -> list[str]:
    return [v for name in names for v in headers.getall(name, []) if v]


def decode_extra_key(encoded: str) -> str:
    """Lower-case, then %-unescape, as kube-aggregator escaped it (keys may hold ``/`` and ``.``)."""
    lowered = encoded.lower()
    try:
        return unquote(lowered, errors="strict")
    except UnicodeDecodeError:
        return lowered


def _extra(headers: Headers, prefixes: Sequence[str]) -> dict[str, tuple[str, ...]]:
    extra: dict[str, list[str]] = {}
    low_prefixes = [p.lower() for p in prefixes]
    seen: set[str] = set()
    for name in headers:
        low = name.lower()
        if low in seen:
            continue
        seen.add(low)
        for prefix in low_prefixes:
            if low.startswith(prefix) and len(low) > len(prefix):
                key = decode_extra_key(name[len(prefix) :])
                extra.setdefault(key, []).extend(headers.getall(name, []))
                break
    return {k: tuple(v) for k, v in extra.items()}


def proxy_refusal(config: RequestHeaderConfig, cert: x509.Certificate) -> str | None:
    """Why ``cert`` does not prove the peer is the front proxy; None when it does."""
    return proxy_check(config, cert)[0]


def proxy_check(config: RequestHeaderConfig, cert: x509.Certificate) -> tuple[str | None, Window]:
    """``proxy_refusal`` and the window of time in which its answer holds."""
    problem, window = client_certificate_check(cert, config.ca)
    if problem is not None:
        return problem, window
    cn = common_name(cert.subject)
    if config.allowed_names and cn not in config.allowed_names:
        return f"common name {cn!r} is not one of the allowed names", window
    return None, window


# How much of a header value or certificate subject a log line quotes.
SHOWN = 64
# Peers whose ignored identity headers have been logged, at most (then the rest are only counted).
MAX_PEERS_LOGGED = 1024


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters)"


class UntrustedHeaders:
    """Identity headers ignored because the peer is not the front proxy: each request counted
    (``kubevirt_expand_untrusted_identity_headers_total``), each peer logged once for each of the two
    reasons (no client certificate; a certificate that is not the front proxy's), its values cut to
    :data:`SHOWN` characters; at most :data:`MAX_PEERS_LOGGED` of those, then a last line saying so."""

    def __init__(self, max_peers: int = MAX_PEERS_LOGGED) -> None:
        self.count = 0
        self._logged: set[tuple[str, bool]] = set()
        self._max = max_peers
        self._full = False

    def note(self, peer: str, certified: bool, why: str, expected: str) -> None:
        """A request from ``peer`` (with a client certificate, or without) whose headers were ignored."""
        self.count += 1
        key = (peer, certified)
        if key in self._logged:
            return
        if len(self._logged) >= self._max:
            if not self._full:
                self._full = True
                log.warning(
                    "identity headers ignored from more than %d peers: no longer logged, still counted "
                    "(kubevirt_expand_untrusted_identity_headers_total)",
                    self._max,
                )
            return
        self._logged.add(key)
        log.warning(
            "identity headers from %s ignored: %s; expected %s (logged once per peer; "
            "kubevirt_expand_untrusted_identity_headers_total counts them)",
            peer or "an unknown peer",
            why,
            expected,
        )


# For callers that keep no count of their own (the gate keeps one per server).
UNTRUSTED = UntrustedHeaders()


def authenticate(
    config: RequestHeaderConfig | None,
    cert: x509.Certificate | None,
    headers: Headers,
    *,
    peer: str = "",
    untrusted: UntrustedHeaders = UNTRUSTED,
) -> UserInfo | None:
    """The forwarded identity, when the peer is the front proxy and named a user; else None (identity
    headers of any other peer noted in ``untrusted``)."""
    if config is None:
        return None
    user = _first_value(headers, config.username_headers)
    if cert is None:
        if user:
            why = f"{config.username_headers[0]}={_shown(user)!r} sent without a client certificate"
            untrusted.note(peer, False, why, config.expectation())
        return None
    refusal = proxy_refusal(config, cert)
    if refusal is not None:
        if user:
            why = (
                f"{config.username_headers[0]}={_shown(user)!r} sent with a certificate (subject "
                f"{_shown(cert.subject.rfc4514_string())!r}) that is not the front proxy's: {refusal}"
            )
            untrusted.note(peer, True, why, config.expectation())
        return None
    if not user:
        return None
    return UserInfo(
        name=user,
        uid=_first_value(headers, config.uid_headers),
        groups=tuple(_all_values(headers, config.group_headers)),
        extra=_extra(headers, config.extra_prefixes),
        method="request-header",
    )


def header_names(config: RequestHeaderConfig) -> Mapping[str, tuple[str, ...]]:
    """For logs: which headers carry what."""
    return {
        "username": config.username_headers,
        "uid": config.uid_headers,
        "group": config.group_headers,
        "extra-prefix": config.extra_prefixes,
    }
