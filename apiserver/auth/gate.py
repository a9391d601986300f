"""The decision for one request, independent of the web framework: who is calling, and may they.

Paths fall in three classes (k8s.io/apiserver's defaults, plus the discovery rule KubeVirt's servers use):
health endpoints are open to anyone; discovery, OpenAPI and ``/version`` to any authenticated caller, without a review
(the aggregator fetches discovery as ``system:kube-aggregator`` without groups); everything else needs an
identity and an allowed SubjectAccessReview.
"""

from __future__ import annotations

import enum
import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.auth import requestheader, x509
from apiserver.auth.authorization import (
    METHOD_VERBS,
    NAMESPACE_SUBRESOURCES,
    WATCH_SUFFIX,
    Attributes,
    Decision,
    SubjectAccessReviewer,
    forbidden_status,
    request_attributes,
)
from apiserver.auth.cache import Held, TTLCache
from apiserver.auth.certs import client_certificate_check, load_der
from apiserver.auth.config import TrustSettings, TrustState
from apiserver.auth.identity import AUTHENTICATED_GROUP, UserInfo
from apiserver.auth.requestheader import CredentialFilter, Headers, RawHeaders
from apiserver.auth.reviewlimits import ReviewThrottled
from apiserver.auth.reviews import ReviewError
from apiserver.auth.tokenreview import TokenAuthenticator, bearer_token
from apiserver.render.kubernetes.errors import status

log = logging.getLogger(__name__)

RETRY_AFTER = 3


class PathClass(enum.Enum):
    PUBLIC = "public"  # no authentication
    AUTHENTICATED = "authenticated"  # any identity, no review
    REVIEWED = "reviewed"  # identity and SubjectAccessReview


# Small memos of pure per-request work: clients repeat the same paths, header sets and certificates.
_MEMO_MAX = 1024


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> Any:
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value
    return value


# Paths and certificates, by their text: without _CLASSES and _ATTRIBUTES a GET through authentication
# costs 1.17x the server CPU, PUT 1.0x (hack/benchmarks/switches.py, path-memos). _CERTIFICATES spares
# parsing the aggregator's certificate (4.8 us against 0.09 us, timed in process) on requests whose
# admission is not remembered (a VM not asked for lately); the switch benchmark repeats its requests,
# so it shows nothing there (0.90-0.95x).
_CLASSES: dict[str, PathClass] = {}
_ATTRIBUTES: dict[tuple[str, str], Attributes] = {}
_CERTIFICATES: dict[bytes, Any] = {}


_HEALTH = re.compile(r"^/(healthz|livez|readyz)(/.*)?$")
_DISCOVERY = re.compile(r"^/apis(/[^/]+(/[^/]+(/version)?)?)?/?$")
_OPENAPI = re.compile(r"^/openapi/(v2|v3)(/.*)?$")
# kube-apiserver's RBAC lets everyone read /version (ClusterRole system:public-info-viewer); here, as
# discovery, every authenticated caller.
_VERSION = re.compile(r"^/version/?$")


def classify(path: str) -> PathClass:
    found = _CLASSES.get(path)
    if found is None:
        found = _remember(_CLASSES, path, _classify(path))
    return found


def _classify(path: str) -> PathClass:
    if _HEALTH.match(path):
        return PathClass.PUBLIC
    if _DISCOVERY.match(path) or _OPENAPI.match(path) or _VERSION.match(path):
        return PathClass.AUTHENTICATED
    return PathClass.REVIEWED


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What the decision needs from a request."""

    method: str
    path: str
    headers: Headers
    peer_certificate: bytes | None = None  # DER, verified by the TLS handshake
    peer: str = ""  # the client's address (its /64 for IPv6): whose TokenReviews these are


@dataclass(frozen=True, slots=True)
class Verdict:
    """``user`` when known; ``status`` (a Status dict) and ``headers`` when the request is refused;
    ``attributes``: what was authorized, for a resource request allowed (its scope is made from them);
    ``credentials``: refused for its credentials (401, or 429 for a TokenReview), which counts against
    the peer (a 429 for a person's share of SubjectAccessReviews does not: through the aggregator the
    peer is kube-apiserver, everyone's)."""

    user: UserInfo | None = None
    status: dict[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    attributes: Attributes | None = None
    credentials: bool = False


_OPEN = Verdict()


def unauthorized() -> dict[str, Any]:
    return status(401, "Unauthorized", "Unauthorized")


def unavailable(message: str) -> Verdict:
    body = status(503, "ServiceUnavailable", message, details={"retryAfterSeconds": RETRY_AFTER})
    return Verdict(status=body, headers={"Retry-After": str(RETRY_AFTER)})


def throttled(*, credentials: bool = False) -> Verdict:
    """kube-apiserver's answer when its flow control has no room: 429 and when to come back."""
    body = status(
        429, "TooManyRequests", "Too many requests, please try again later.", details={"retryAfterSeconds": 1}
    )
    return Verdict(status=body, headers={"Retry-After": "1"}, credentials=credentials)


def _with_authenticated_group(user: UserInfo) -> UserInfo:
    if AUTHENTICATED_GROUP in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED_GROUP), user.extra, user.method)


def _attributes(method: str, path: str) -> Attributes:
    found = _ATTRIBUTES.get((method, path))
    if found is None:
        found = _remember(_ATTRIBUTES, (method, path), request_attributes(method, path))
    return found


def _wide(attrs: Attributes) -> Attributes | None:
    """What a request naming an object of a namespace asks about every object of that kind there (no
    name, no path): the SubjectAccessReview whose allow holds for any name. RBAC decides by namespace
    unless a rule lists ``resourceNames``, and a rule that does never allows a review without a name
    (``kubectl auth can-i get virtualmachines/expand-spec -n NS``); so an allow of this review is the
    allow of every named one, and a refusal says nothing (the named review is asked then). None for a
    request that names no object of a namespace."""
    if not attrs.name or not attrs.namespace or not attrs.resource_request:
        return None
    return Attributes(
        verb=attrs.verb,
        resource_request=True,
        namespace=attrs.namespace,
        group=attrs.group,
        version=attrs.version,
        resource=attrs.resource,
        subresource=attrs.subresource,
    )


# A request naming one object of a namespace, without the name: method, group, version, namespace,
# resource, subresource (the key of its namespace's admissions: :func:`_in_namespace`).
_Shape = tuple[str, str, str, str, str, str]


def _in_namespace(method: str, path: str) -> tuple[_Shape, str] | None:
    """For a path naming one object of a namespace (``/apis/G/V/namespaces/NS/R/NAME[/SUB]``): what it
    asks but the name (the key of its namespace's admissions), and the name; None for any other path
    (its own memos decide it). One split, not :func:`request_attributes` (1.0 against 4.6 us, timed in
    process), and nothing remembered: the point is a cost that does not depend on which object is
    asked for. A path this declines but :func:`_wide` would take (a trailing slash, more segments) is
    decided by its path, as before; :meth:`AuthGate.admit` remembers an admission by namespace only
    where :func:`_wide_of` the shape is what was reviewed."""
    if not path.startswith("/apis/") or path.endswith(WATCH_SUFFIX):
        return None
    parts = path.split("/")
    count = len(parts)
    if count == 8:
        subresource = ""
    elif count == 9:
        subresource = parts[8]
        if not subresource:
            return None
    else:
        return None
    _, _, group, version, namespaces, namespace, resource, name = parts[:8]
    if (
        namespaces != "namespaces"
        or not (group and version and namespace and resource and name)
        or resource in NAMESPACE_SUBRESOURCES
    ):
        return None
    return (method, group, version, namespace, resource, subresource), name


def _wide_of(shape: _Shape) -> Attributes:
    """The attributes of every name of the shape's namespace, as :func:`_wide` makes them."""
    method, group, version, namespace, resource, subresource = shape
    verb = METHOD_VERBS.get(method.upper(), "")
    return Attributes(verb, True, "", namespace, group, version, resource, subresource, "")


def _certificate(der: bytes) -> Any:
    """The parsed certificate (the aggregator presents the same one on every request)."""
    try:
        return _CERTIFICATES[der]
    except KeyError:
        return _remember(_CERTIFICATES, der, load_der(der))


@dataclass(slots=True)
class _Basis:
    """What a verdict rested on, and so how long it holds: the review caches' expiries
    (``time.monotonic``) and the client certificate's window (POSIX seconds)."""

    expires: float = math.inf
    valid_from: float = -math.inf
    valid_until: float = math.inf
    # The request named an object, and was allowed for every name of its namespace (see _wide).
    by_namespace: bool = False
    # From when a use of the verdict renews the review answers it rests on, and how (Held.renew).
    renew_at: float = math.inf
    renewers: tuple[Callable[[], None], ...] = ()

    def window(self, window: tuple[float, float]) -> None:
        self.valid_from = max(self.valid_from, window[0])
        self.valid_until = min(self.valid_until, window[1])

    def rests_on(self, held: Held[Any]) -> None:
        """The verdict rests on this review answer: it holds no longer, and renews it when used late."""
        self.expires = min(self.expires, held.until)
        if held.renew is not None:
            self.renew_at = min(self.renew_at, held.renew_at)
            self.renewers = (*self.renewers, held.renew)


@dataclass(frozen=True, slots=True)
class RememberedAdmission:
    """An admitted request's verdict and the headers to strip from it, as remembered for its inputs."""

    verdict: Verdict
    strip: tuple[str, ...]
    settings: TrustSettings | None
    expires: float
    valid_from: float
    valid_until: float
    epoch: int
    renew_at: float = math.inf
    renewers: tuple[Callable[[], None], ...] = ()

    def holds(self, settings: TrustSettings | None) -> bool:
        """Still the answer: same trust settings object, no review cache entry dropped or expired, and
        the client certificate still inside its validity window. Used in the last part of a review
        answer's time, it starts that answer's renewal (in the background, apiserver.auth.cache), as a
        lookup of the answer would: the memo spares the lookups, not the renewals."""
        if settings is not self.settings or self.epoch != TTLCache.epoch:
            return False
        monotonic = time.monotonic()
        if monotonic >= self.expires:
            return False
        if monotonic >= self.renew_at:
            for renew in self.renewers:
                renew()
        now = time.time()
        return self.valid_from <= now < self.valid_until

    def widened(self, attributes: Attributes) -> RememberedAdmission:
        """This admission as one of every name of a namespace (``attributes``: :func:`_wide`'s, no
        name), for the requests of that namespace that name another object."""
        verdict = Verdict(user=self.verdict.user, attributes=attributes)
        return RememberedAdmission(
            verdict,
            self.strip,
            self.settings,
            self.expires,
            self.valid_from,
            self.valid_until,
            self.epoch,
            self.renew_at,
            self.renewers,
        )


# An admission and the name the request asked for: "" when the admission is the request's own (its
# attributes name what it asked), else the name of the object asked for in the namespace whose every
# name the admission allows (its attributes name none; the scope is narrowed to this name).
Admitted = tuple[RememberedAdmission, str]


_ADMITTED_MAX = 1024
_ADMITTED_HEADERS_MAX = 32  # requests with more headers than that are decided afresh every time


_Key = tuple[str, str, bytes | None, RawHeaders]  # method, path, client certificate, headers
# what a request asks but the name (_Shape), client certificate, headers
_WideKey = tuple[_Shape, bytes | None, RawHeaders]


def _store(memo: dict[Any, RememberedAdmission], key: Any, admission: RememberedAdmission) -> None:
    if len(memo) >= _ADMITTED_MAX:
        memo.clear()
    memo[key] = admission


class _Throttled:
    """One warning line every 10 s for requests refused a review (TokenReview or SubjectAccessReview),
    with the count and the last why."""

    def __init__(self) -> None:
        self.count = 0
        self._last = -math.inf

    def note(self, why: str) -> None:
        self.count += 1
        now = time.monotonic()
        if now - self._last >= 10:
            log.warning("answered %d request(s) 429 without a review (last: %s)", self.count, why)
            self.count, self._last = 0, now


class AuthGate:
    """Authentication (request-header, client certificate, bearer token, in that order) and authorization.

    Admitted requests are remembered by their method, path, client certificate and credentials (the
    identity headers and ``Authorization``, as sent) for as long as every input of the decision is
    unchanged: the trust settings object (replaced whole when the ConfigMap or a CA file changes), the
    TokenReview and SubjectAccessReview cache entries it used (their expiry; any entry dropped early
    invalidates all), and the certificate's validity. A first memo is keyed by all the raw headers (an
    identical request skips even picking the credentials out), a second by the credentials alone (a
    request that differs only in other headers: Content-Length, X-Forwarded-For, ...). Only admissions
    are remembered: refusals are decided, and logged, every time.

    A request naming an object of a namespace (GET expand-spec of a VM) is authorized first for every
    name there (:func:`_wide`: the review without a name, which RBAC allows only where it allows any
    name); when that is allowed, so is the request, and the admission is remembered for the namespace
    instead of the path (a third and fourth memo, keyed by what the path asks but the name), its
    attributes naming no object; the filter narrows the scope it grants to the name each request asks
    for. A request for any object of the same kind there is then admitted from memory, and none is
    remembered by its path: its cost does not depend on which object it names, nor on how many were
    asked for (GET of random VMs among 30,000 against among 1,000: docs/performance.md). Where the
    review without a name is refused (a Role listing ``resourceNames``), the named review decides, and
    only the path's memos remember it.
    """

    def __init__(
        self,
        trust: TrustState,
        *,
        tokens: TokenAuthenticator | None,
        reviewer: SubjectAccessReviewer | None,
        authorize_references: bool = False,
    ) -> None:
        self.trust = trust
        self.tokens = tokens
        self.reviewer = reviewer
        self.authorize_references = authorize_references
        # (trust settings, header names present) -> identity headers among them; the settings object
        # is replaced whole when the trust configuration changes, so it is part of the key. Without it
        # PUT costs 1.16x the server CPU, GET 0.99x (hack/benchmarks/switches.py, identity-headers-memo).
        self._identity_memo: dict[tuple[int, tuple[str, ...]], tuple[object, list[str]]] = {}
        # Identical requests admitted again from memory: without them a request through authentication
        # costs 1.46x (GET) and 1.57x (PUT) the server CPU (hack/benchmarks/switches.py,
        # remembered-admissions).
        self._admitted: dict[_Key, RememberedAdmission] = {}
        self._by_credentials: dict[_Key, RememberedAdmission] = {}
        # The same for every name of a namespace (a caller's admissions per namespace and kind, so at
        # most _ADMITTED_MAX namespaces x callers before they are cleared).
        self._by_namespace: dict[_WideKey, RememberedAdmission] = {}
        self._by_namespace_credentials: dict[_WideKey, RememberedAdmission] = {}
        self._filter: tuple[TrustSettings | None, CredentialFilter] = (None, CredentialFilter(None))
        self._throttled = _Throttled()
        # Identity headers from peers that are not the front proxy: counted, logged once per peer.
        self.untrusted = requestheader.UntrustedHeaders()

    def identity_headers(self, present: Iterable[str]) -> list[str]:
        """Headers to remove from the request before it reaches a handler, trusted or not."""
        settings = self.trust.settings
        names = tuple(present)
        key = (id(settings), names)
        known = self._identity_memo.get(key)
        if known is not None and known[0] is settings:
            return list(known[1])
        found = requestheader.identity_header_names(settings.request_header if settings else None, names)
        _remember(self._identity_memo, key, (settings, found))
        return list(found)

    def admitted(
        self, method: str, path: str, raw_headers: RawHeaders, peer_certificate: bytes | None
    ) -> Admitted | None:
        """The remembered admission of an identical request, or of any request naming an object of the
        same namespace and kind (:func:`_in_namespace`), whose inputs are all unchanged; else None.
        Nothing is remembered here: a request for an object not asked for lately costs what a repeated
        one does, and adds nothing to any memo."""
        key = (method, path, peer_certificate, raw_headers)
        settings = self.trust.settings
        found = self._admitted.get(key)
        if found is not None and found.holds(settings):
            return found, ""
        if not self._by_namespace:
            return None
        inside = _in_namespace(method, path)
        if inside is None:
            return None
        found = self._by_namespace.get((inside[0], peer_certificate, raw_headers))
        if found is None or not found.holds(settings):
            return None
        return found, inside[1]

    def _credentials(self, settings: TrustSettings | None, raw_headers: RawHeaders) -> RawHeaders:
        known, pick = self._filter
        if known is not settings:
            pick = CredentialFilter(settings.request_header if settings else None)
            self._filter = (settings, pick)
        return pick(raw_headers)

    async def admit(self, info: RequestInfo, raw_headers: RawHeaders | None = None) -> Admitted:
        """Decide ``info`` (``check``) and name the headers to strip; remember an admission when
        ``raw_headers`` (the request's headers as sent) are given: by namespace when the request named
        an object there and was allowed for every name (then the admission's attributes name none, and
        the name asked for comes with it), else by its path."""
        settings = self.trust.settings
        keys: tuple[_Key, _Key] | None = None
        wide: tuple[_WideKey, _WideKey] | None = None
        inside = None
        if raw_headers is not None and len(raw_headers) <= _ADMITTED_HEADERS_MAX:
            head = (info.method, info.path, info.peer_certificate)
            credentials = self._credentials(settings, raw_headers)
            keys = ((*head, raw_headers), (*head, credentials))
            found = self._by_credentials.get(keys[1])
            if found is not None and found.holds(settings):
                _store(self._admitted, keys[0], found)
                return found, ""
            inside = _in_namespace(info.method, info.path)
            if inside is not None:
                cert = info.peer_certificate
                wide = ((inside[0], cert, raw_headers), (inside[0], cert, credentials))
                found = self._by_namespace_credentials.get(wide[1])
                if found is not None and found.holds(settings):
                    _store(self._by_namespace, wide[0], found)
                    return found, inside[1]
        epoch = TTLCache.epoch  # read before any await: a drop while a review is made invalidates
        basis = _Basis()
        verdict = await self._check(info, basis)
        strip = self.identity_headers(info.headers)
        if info.headers.getall("Authorization", []):
            strip.append("Authorization")
        admission = RememberedAdmission(
            verdict,
            tuple(strip),
            settings,
            basis.expires,
            basis.valid_from,
            basis.valid_until,
            epoch,
            basis.renew_at,
            basis.renewers,
        )
        if keys is None or verdict.status is not None or not admission.holds(settings):
            return admission, ""
        attributes = verdict.attributes
        if (
            wide is not None
            and inside is not None
            and basis.by_namespace
            and attributes is not None
            and _wide(attributes) == (every := _wide_of(inside[0]))
        ):
            # Allowed for every name of the namespace, as reviewed: remembered so, under the same inputs.
            whole = admission.widened(every)
            _store(self._by_namespace, wide[0], whole)
            _store(self._by_namespace_credentials, wide[1], whole)
            return whole, inside[1]
        _store(self._admitted, keys[0], admission)
        _store(self._by_credentials, keys[1], admission)
        return admission, ""

    async def authenticate(self, info: RequestInfo, basis: _Basis | None = None) -> UserInfo | None:
        """The caller, or None; raises :class:`ReviewError` when a token could not be checked."""
        settings = self.trust.settings
        cert = _certificate(info.peer_certificate) if info.peer_certificate else None
        if settings is not None:
            user = requestheader.authenticate(
                settings.request_header, cert, info.headers, peer=info.peer, untrusted=self.untrusted
            )
            if user is None:
                user = x509.authenticate(settings.client_ca, cert)
            if cert is not None and basis is not None:
                # Which way the certificate counted (or did not) holds only within its validity.
                for bundle in (
                    settings.request_header.ca if settings.request_header else None,
                    settings.client_ca,
                ):
                    if bundle is not None:
                        basis.window(client_certificate_check(cert, bundle)[1])
            if user is not None:
                return _with_authenticated_group(user)
        if self.tokens is not None:
            for value in info.headers.getall("Authorization", []):
                token = bearer_token(value)
                if token:
                    held = await self.tokens.authenticate_until(token, info.peer)
                    if basis is not None:
                        basis.rests_on(held)
                    user = held.value
                    return _with_authenticated_group(user) if user else None
        return None

    async def identify(self, info: RequestInfo) -> UserInfo | None:
        """The caller of a request on an open path, when its credentials say who it is; None for an
        anonymous caller, bad credentials, or credentials that cannot be checked now."""
        if self.trust.settings is None:
            return None
        try:
            return await self.authenticate(info)
        except ReviewError:
            return None

    async def authorize(
        self, user: UserInfo, attrs: Attributes, basis: _Basis | None = None, *, rationed: bool = False
    ) -> Decision:
        """Raises :class:`ReviewError` when the cluster could not be asked (:class:`ReviewThrottled`
        when ``rationed`` and the caller's person has had its share of reviews)."""
        if self.reviewer is None:
            return Decision(False, "no authorizer configured")
        held = await self.reviewer.authorize_until(user, attrs, rationed=rationed)
        if basis is not None:
            basis.rests_on(held)
        return held.value

    async def check(self, info: RequestInfo) -> Verdict:
        return await self._check(info, None)

    async def _check(self, info: RequestInfo, basis: _Basis | None) -> Verdict:
        kind = classify(info.path)
        if kind is PathClass.PUBLIC:
            return _OPEN
        if self.trust.settings is None:
            _ready, why = self.trust.readiness()
            return unavailable(f"authentication is not configured yet: {why}")
        try:
            user = await self.authenticate(info, basis)
        except ReviewThrottled as exc:
            self._throttled.note(str(exc))
            return throttled(credentials=True)
        except ReviewError as exc:
            log.warning("cannot authenticate %s %s: %s", info.method, info.path, exc)
            return unavailable("the credentials of the request could not be checked, try again later")
        if user is None:
            return Verdict(status=unauthorized(), credentials=True)
        if kind is PathClass.AUTHENTICATED:
            return Verdict(user=user)
        attrs = _attributes(info.method, info.path)
        wide = _wide(attrs)
        if wide is not None:
            # Allowed for every name of the namespace: allowed for this one (see _wide). A refusal
            # there is no answer: the named review below decides, and is what a refusal says.
            try:
                decision = await self.authorize(user, wide, basis, rationed=True)
            except ReviewThrottled as exc:
                self._throttled.note(str(exc))
                return throttled()
            except ReviewError as exc:
                log.warning("cannot authorize %s for %r: %s", wide.describe(), user.name, exc)
                return unavailable("the request could not be authorized, try again later")
            if decision.allowed:
                if basis is not None:
                    basis.by_namespace = True
                return Verdict(user=user, attributes=attrs)
        return await self.decide(user, attrs, basis, rationed=True)

    async def decide(
        self,
        user: UserInfo,
        attrs: Attributes,
        basis: _Basis | None = None,
        *,
        quiet: bool = False,
        rationed: bool = False,
    ) -> Verdict:
        """Allowed (the user), refused (kube-apiserver's 403, logged; at debug level when ``quiet``: a
        list's items redacted for the caller), rationed (429, as kube-apiserver's flow control answers: the
        person made more reviews than its share; only ``rationed``, a request's own) or undecided (503): a
        request's own authorization, and each read the tenancy gate asks about (:mod:`apiserver.auth.access`)."""
        try:
            decision = await self.authorize(user, attrs, basis, rationed=rationed)
        except ReviewThrottled as exc:
            self._throttled.note(str(exc))
            return throttled()
        except ReviewError as exc:
            log.warning("cannot authorize %s for %r: %s", attrs.describe(), user.name, exc)
            return unavailable("the request could not be authorized, try again later")
        if decision.allowed:
            return Verdict(user=user, attributes=attrs)
        log.log(
            logging.DEBUG if quiet else logging.INFO,
            "forbidden: %r may not %s (%s)",
            user.name,
            attrs.describe(),
            decision.reason or "no reason",
        )
        return Verdict(user=user, status=forbidden_status(user, attrs, decision.reason))
