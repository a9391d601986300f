"""Authorization with SubjectAccessReview (authorization.k8s.io/v1), decisions cached briefly.

The attributes of a request are derived from its method and path the way k8s.io/apiserver's
RequestInfoFactory does, so that RBAC rules written for kube-apiserver mean the same thing here.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from apiserver.auth.cache import Held, TTLCache
from apiserver.auth.identity import MASTERS_GROUP, UserInfo, person
from apiserver.auth.reviewlimits import SUBJECT_ACCESS_REVIEW_LIMITS, ReviewLimiter, ReviewLimits
from apiserver.auth.reviews import SUBJECT_ACCESS_REVIEW_PATH, ReviewClient, ReviewError
from apiserver.render.kubernetes.errors import status

log = logging.getLogger(__name__)

DEFAULT_ALLOWED_TTL = 10.0
DEFAULT_DENIED_TTL = 10.0

METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
# Path segments after /namespaces/{ns} that are subresources of the namespace itself.
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


class Attributes(NamedTuple):
    """What is asked: a resource request (group/version/resource/...) or a non-resource path. A tuple:
    made for every request naming an object not asked for lately (and a key of the review cache), in a
    third of a frozen dataclass's time."""

    verb: str
    resource_request: bool
    path: str = ""
    namespace: str = ""
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    def review_fields(self) -> dict[str, Any]:
        """``resourceAttributes`` or ``nonResourceAttributes`` of a SubjectAccessReview spec."""
        if not self.resource_request:
            return {"nonResourceAttributes": {"path": self.path, "verb": self.verb}}
        attrs = {
            "namespace": self.namespace,
            "verb": self.verb,
            "group": self.group,
            "version": self.version,
            "resource": self.resource,
            "subresource": self.subresource,
            "name": self.name,
        }
        return {"resourceAttributes": {k: v for k, v in attrs.items() if v}}

    def describe(self) -> str:
        """For logs: ``get virtualmachines/expand-spec "x" in ns`` or ``get path "/metrics"``."""
        if not self.resource_request:
            return f"{self.verb} path {self.path!r}"
        what = self.resource + (f"/{self.subresource}" if self.subresource else "")
        return f"{self.verb} {what}.{self.group} {self.name!r} in namespace {self.namespace!r}"


WATCH_SUFFIX = "?watch"


def authorization_path(method: str, path: str, query: Mapping[str, str]) -> str:
    """The path as authorization tells requests apart: a GET with ``?watch`` (true, as kube-apiserver
    reads the flag: present and neither "0" nor "false") is a watch, not a list, so it is decided (and
    its decision remembered) apart from the list of the same path."""
    if method == "GET" and "watch" in query and query.get("watch", "").lower() not in ("0", "false"):
        return path + WATCH_SUFFIX
    return path


def request_attributes(method: str, path: str) -> Attributes:
    """The attributes kube-apiserver would authorize for ``method path`` (path without the query, but
    for :data:`WATCH_SUFFIX`, see :func:`authorization_path`)."""
    watch = path.endswith(WATCH_SUFFIX)
    if watch:
        path = path[: -len(WATCH_SUFFIX)]
    parts = [p for p in path.strip("/").split("/")] if path.strip("/") else []
    if len(parts) < 4 or parts[0] != "apis":
        return Attributes(verb=method.lower(), resource_request=False, path=path)
    group, version, rest = parts[1], parts[2], parts[3:]
    verb = METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if watch and verb == "get":
        verb = "watch"
    elif not name and verb == "get":
        verb = "list"
    elif not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(
        verb=verb,
        resource_request=True,
        path=path,
        namespace=namespace,
        group=group,
        version=version,
        resource=resource,
        subresource=subresource,
        name=name,
    )


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


_MASTERS = Decision(True, "system:masters")


def forbidden_status(user: UserInfo, attrs: Attributes, reason: str = "") -> dict[str, Any]:
    """The 403 Status in kube-apiserver's words (``responsewriters.forbiddenMessage``)."""
    if not attrs.resource_request:
        message = f"forbidden: User {_q(user.name)} cannot {attrs.verb} path {_q(attrs.path)}"
        if reason:
            message += f": {reason}"
        return status(403, "Forbidden", message, details={})
    what = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    scope = f"in the namespace {_q(attrs.namespace)}" if attrs.namespace else "at the cluster scope"
    why = (
        f"User {_q(user.name)} cannot {attrs.verb} resource {_q(what)} in API group {_q(attrs.group)} {scope}"
    )
    if reason:
        why += f": {reason}"
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    subject = f"{qualified} {_q(attrs.name)}" if attrs.name else qualified
    details: dict[str, Any] = {}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.group:
        details["group"] = attrs.group
    details["kind"] = attrs.resource
    return status(403, "Forbidden", f"{subject} is forbidden: {why}", details=details)


def _q(text: str) -> str:
    """Go's %q for the plain strings that occur here."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class SubjectAccessReviewer:
    """Asks the cluster whether a user may do something; remembers allows and denies for a while."""

    def __init__(
        self,
        client: ReviewClient,
        *,
        allowed_ttl: float = DEFAULT_ALLOWED_TTL,
        denied_ttl: float = DEFAULT_DENIED_TTL,
        clock: Callable[[], float] = time.monotonic,
        limits: ReviewLimits = SUBJECT_ACCESS_REVIEW_LIMITS,
    ) -> None:
        self._client = client
        # A request's own reviews not answered from the cache, per person and in all (reviewlimits.py):
        # identities minted by the hundred cost 429s, not kube-apiserver's time.
        self.limiter = ReviewLimiter(
            limits, clock, kind="SubjectAccessReviews", per_source="SubjectAccessReviews a second for"
        )
        # Allows in use are renewed ahead (apiserver.auth.cache); a denial never is: it is asked again
        # only once it has expired.
        self._cache: TTLCache[Decision] = TTLCache(
            lambda d: allowed_ttl if d.allowed else denied_ttl, renew=lambda d: d.allowed, clock=clock
        )

    def cache_figures(self) -> tuple[int, int, int]:
        """Decisions held, lookups answered from them, and reviews asked of the cluster (renewals too)."""
        return len(self._cache), self._cache.hits, self._cache.misses + self._cache.renewed

    async def authorize(self, user: UserInfo, attrs: Attributes) -> Decision:
        """Allowed or denied; :class:`ReviewError` when the cluster could not be asked."""
        return (await self.authorize_until(user, attrs)).value

    async def authorize_until(
        self, user: UserInfo, attrs: Attributes, *, rationed: bool = False
    ) -> Held[Decision]:
        """``authorize``, until when (``time.monotonic``) the cached decision stands, and its renewal.
        ``rationed``: a review not cached is made only within the person's share and the slots in all
        (:class:`~apiserver.auth.reviewlimits.ReviewThrottled` beyond): a request's own authorization.
        The reads its rendering makes are not: a first list of VMs with a thousand PersistentVolumeClaims
        needs a thousand reviews, and a refusal there would hide items, not say 429."""
        if MASTERS_GROUP in user.groups:
            return Held(_MASTERS, math.inf)
        key = (user.cache_key(), attrs)
        return await self._cache.get_until(key, lambda: self._review(user, attrs, rationed))

    async def _review(self, user: UserInfo, attrs: Attributes, rationed: bool = False) -> Decision:
        spec = {**attrs.review_fields(), **user.review_fields()}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        if rationed:
            async with self.limiter.review(person(user.name)):
                answer = await self._client.create(SUBJECT_ACCESS_REVIEW_PATH, body)
        else:
            answer = await self._client.create(SUBJECT_ACCESS_REVIEW_PATH, body)
        result = answer.get("status")
        if not isinstance(result, dict):
            raise ReviewError("SubjectAccessReview answer has no status")
        reason = str(result.get("reason") or "")
        if result.get("allowed") and not result.get("denied"):
            return Decision(True, reason)
        if result.get("evaluationError"):
            log.info(
                "SubjectAccessReview for %s: evaluation error %s", attrs.describe(), result["evaluationError"]
            )
        return Decision(False, reason)
