"""Front-proxy (request-header) authentication: the identity the aggregator forwards in headers.

The ``X-Remote-*`` headers are anyone's to send; they are believed only when the TLS peer proved, with a
client certificate issued by the request-header CA and a common name on the allowed list, that it is the
aggregator. Every refusal is logged with what was expected, because a front-proxy CA that differs from
kube-apiserver's is the most common reason an aggregated server answers 401 to everything.
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


def authenticate(
    config: RequestHeaderConfig | None, cert: x509.Certificate | None, headers: Headers
) -> UserInfo | None:
    """The forwarded identity, when the peer is the front proxy and named a user; else None."""
    if config is None:
        return None
    user = _first_value(headers, config.username_headers)
    if cert is None:
        if user:
            log.warning(
                "identity headers (%s=%r) sent without a client certificate were ignored; expected %s",
                config.username_headers[0],
                user,
                config.expectation(),
            )
        return None
    refusal = proxy_refusal(config, cert)
    if refusal is not None:
        if user:
            log.warning(
                "identity headers ignored: the peer certificate (subject %r) is not the front proxy's: "
                "%s; expected %s",
                cert.subject.rfc4514_string(),
                refusal,
                config.expectation(),
            )
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
