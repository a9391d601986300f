"""A caller's reads, decided by SubjectAccessReview: the auth side of the tenancy gate.

:class:`CallerAccess` is one caller's :class:`~apiserver.sources.access.ReadAccess` (it matches that
protocol by shape; auth and sources do not import each other): may this user ``get`` that object, or
``list`` those? Decisions come from the same cached SubjectAccessReviews as the request's own
authorization (allows and denies kept ``--authorization-webhook-cache-*-ttl``), so a repeated read
costs a dictionary look-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from apiserver.auth.authorization import Attributes
from apiserver.auth.gate import AuthGate
from apiserver.auth.identity import UserInfo


class ResourceRead(Protocol):
    """A read as :class:`apiserver.sources.access.Read` describes it."""

    @property
    def verb(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...


class CallerAccess:
    """Whether ``user`` may make a read, asked of the cluster through ``gate``'s reviewer."""

    __slots__ = ("gate", "user")

    def __init__(self, gate: AuthGate, user: UserInfo) -> None:
        self.gate = gate
        self.user = user

    async def review(self, read: ResourceRead, *, quiet: bool = False) -> Mapping[str, Any] | None:
        """None when allowed; kube-apiserver's 403 for the read when refused (logged at debug level
        only when ``quiet``); a 503 when the review could not be made (never taken as an allow)."""
        attrs = Attributes(
            verb=read.verb,
            resource_request=True,
            namespace=read.namespace,
            group=read.group,
            resource=read.resource,
            name=read.name,
        )
        return (await self.gate.decide(self.user, attrs, quiet=quiet)).status
