"""Trust settings: which CAs and which front proxy to believe, from the cluster and from flags.

kube-apiserver publishes them in ``kube-system/extension-apiserver-authentication``; they are watched
and applied live. Flags override them from files, as in k8s.io/apiserver: ``--client-ca-file`` replaces
the ConfigMap's client CA, and ``--requestheader-client-ca-file`` replaces the whole request-header block
(CA, allowed names, header names). Files are re-read when they change.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from apiserver.auth.certs import BundleError, CABundle, union_pem
from apiserver.auth.requestheader import (
    DEFAULT_EXTRA_PREFIXES,
    DEFAULT_GROUP_HEADERS,
    DEFAULT_UID_HEADERS,
    DEFAULT_USERNAME_HEADERS,
    RequestHeaderConfig,
)

log = logging.getLogger(__name__)

CONFIGMAP_NAMESPACE = "kube-system"
CONFIGMAP_NAME = "extension-apiserver-authentication"
CONFIGMAP_ORIGIN = f"configmap {CONFIGMAP_NAMESPACE}/{CONFIGMAP_NAME}"


class TrustConfigError(ValueError):
    """Trust settings that cannot be applied (bad PEM, a key that is not a JSON list, ...)."""


@dataclass(frozen=True, slots=True)
class TrustOptions:
    """The trust-related flags (paths are files re-read on change; lists override the ConfigMap)."""

    client_ca_file: str = ""
    requestheader_client_ca_file: str = ""
    requestheader_allowed_names: tuple[str, ...] = ()
    requestheader_username_headers: tuple[str, ...] = DEFAULT_USERNAME_HEADERS
    requestheader_uid_headers: tuple[str, ...] = DEFAULT_UID_HEADERS
    requestheader_group_headers: tuple[str, ...] = DEFAULT_GROUP_HEADERS
    requestheader_extra_headers_prefix: tuple[str, ...] = DEFAULT_EXTRA_PREFIXES
    # Never read the ConfigMap (all trust from flags).
    skip_lookup: bool = False

    @property
    def needs_lookup(self) -> bool:
        """k8s.io/apiserver reads the ConfigMap unless both CA files are given or the lookup is skipped."""
        return not self.skip_lookup and not (self.client_ca_file and self.requestheader_client_ca_file)

    @property
    def files(self) -> list[str]:
        return [p for p in (self.client_ca_file, self.requestheader_client_ca_file) if p]


@dataclass(frozen=True, slots=True)
class TrustSettings:
    """The trust in force: each part None when not configured (that way of authenticating is off)."""

    client_ca: CABundle | None = None
    request_header: RequestHeaderConfig | None = None

    def verify_pem(self) -> bytes:
        """Every CA a client certificate may chain to, for the TLS handshake."""
        rh = self.request_header.ca if self.request_header else None
        return union_pem([self.client_ca, rh])

    def describe(self) -> str:
        parts = [f"client CA {self.client_ca.describe()}" if self.client_ca else "no client CA"]
        rh = self.request_header
        if rh is None:
            parts.append("no request-header CA (front-proxy authentication off)")
        else:
            names = list(rh.allowed_names) or "any"
            parts.append(
                f"request-header CA {rh.ca.describe()}, allowed names {names}, user headers "
                f"{list(rh.username_headers)}, uid headers {list(rh.uid_headers)}, group headers "
                f"{list(rh.group_headers)}, extra prefixes {list(rh.extra_prefixes)}"
            )
        return "; ".join(parts)


def _json_list(data: Mapping[str, str], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = data.get(key)
    if raw is None or not raw.strip():
        return default
    try:
        value = json.loads(raw)
    except ValueError:
        raise TrustConfigError(f"{CONFIGMAP_ORIGIN}: {key} is not a JSON list: {raw!r}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TrustConfigError(f"{CONFIGMAP_ORIGIN}: {key} is not a JSON list of strings: {raw!r}")
    return tuple(value)


def _bundle(pem: str | bytes | None, origin: str) -> CABundle | None:
    if pem is None or not pem.strip():
        return None
    raw = pem.encode() if isinstance(pem, str) else pem
    try:
        return CABundle.from_pem(raw, origin)
    except BundleError as exc:
        raise TrustConfigError(str(exc)) from None


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise TrustConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def build_settings(options: TrustOptions, configmap: Mapping[str, str] | None) -> TrustSettings:
    """Combine the flags (their files read now) with the ConfigMap's ``data``; raise TrustConfigError."""
    cm = configmap or {}
    if options.client_ca_file:
        client_ca = _bundle(_read(options.client_ca_file), options.client_ca_file)
        if client_ca is None:
            raise TrustConfigError(f"{options.client_ca_file}: no certificate in the file")
    else:
        client_ca = _bundle(cm.get("client-ca-file"), CONFIGMAP_ORIGIN + " key client-ca-file")
    request_header: RequestHeaderConfig | None
    if options.requestheader_client_ca_file:
        path = options.requestheader_client_ca_file
        ca = _bundle(_read(path), path)
        if ca is None:
            raise TrustConfigError(f"{path}: no certificate in the file")
        request_header = RequestHeaderConfig(
            ca=ca,
            allowed_names=options.requestheader_allowed_names,
            username_headers=options.requestheader_username_headers,
            uid_headers=options.requestheader_uid_headers,
            group_headers=options.requestheader_group_headers,
            extra_prefixes=options.requestheader_extra_headers_prefix,
        )
    else:
        ca = _bundle(
            cm.get("requestheader-client-ca-file"), CONFIGMAP_ORIGIN + " key requestheader-client-ca-file"
        )
        request_header = None
        if ca is not None:
            request_header = RequestHeaderConfig(
                ca=ca,
                allowed_names=_json_list(cm, "requestheader-allowed-names", ()),
                username_headers=_json_list(cm, "requestheader-username-headers", DEFAULT_USERNAME_HEADERS),
                # Absent from the ConfigMap on clusters whose aggregator does not forward UIDs.
                uid_headers=_json_list(cm, "requestheader-uid-headers", ()),
                group_headers=_json_list(cm, "requestheader-group-headers", DEFAULT_GROUP_HEADERS),
                extra_prefixes=_json_list(cm, "requestheader-extra-headers-prefix", DEFAULT_EXTRA_PREFIXES),
            )
    return TrustSettings(client_ca=client_ca, request_header=request_header)


Listener = Callable[[TrustSettings], Awaitable[None]]


@dataclass(slots=True)
class TrustState:
    """The settings in force and what readiness reports about them."""

    options: TrustOptions
    settings: TrustSettings | None = None
    configmap: Mapping[str, str] | None = None
    configmap_seen: bool = False
    error: str = ""
    listeners: list[Listener] = field(default_factory=list)

    @property
    def loaded(self) -> bool:
        return self.settings is not None

    def readiness(self) -> tuple[bool, str]:
        """(ready, message) for the ``authentication-config`` check."""
        if self.settings is None:
            if self.options.needs_lookup and not self.configmap_seen:
                return False, f"{CONFIGMAP_ORIGIN} not read yet" + (f": {self.error}" if self.error else "")
            return False, self.error or "trust settings not loaded"
        return True, ""

    async def reload(self) -> bool:
        """Rebuild from the flag files and the last ConfigMap seen; keep the old settings on error."""
        if self.options.needs_lookup and not self.configmap_seen:
            return False
        try:
            new = build_settings(self.options, self.configmap)
        except TrustConfigError as exc:
            self.error = str(exc)
            log.error("trust settings not applied, keeping the previous ones: %s", exc)
            return False
        self.error = ""
        if new == self.settings:
            return False
        self.settings = new
        log.info("trust settings applied: %s", new.describe())
        for listener in list(self.listeners):
            try:
                await listener(new)
            except Exception:
                log.exception("applying new trust settings failed")
        return True

    async def apply_configmap(self, data: Mapping[str, str] | None) -> bool:
        self.configmap = dict(data) if data is not None else None
        self.configmap_seen = True
        return await self.reload()

    def subscribe(self, listener: Listener) -> None:
        self.listeners.append(listener)


def split_list(values: Sequence[str] | None) -> tuple[str, ...]:
    """Flag lists accept repeats and commas (``--x a,b --x c``), as pflag's StringSlice does."""
    out: list[str] = []
    for value in values or ():
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return tuple(out)
