"""TokenReview and SubjectAccessReview for the fake API, with answers the test decides.

``reviews = Reviews.install(fake)`` (before ``fake.start()``); then ``reviews.tokens["t"] = ("alice",
["dev"])`` makes token ``t`` authenticate, ``reviews.rules`` decides SubjectAccessReviews (the first rule
whose fields all match the review's spec wins; no match = denied), and ``reviews.token_reviews`` /
``reviews.access_reviews`` hold every review received, as sent.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.fakekube.server import FakeKube, json_response, status_response

JSON = dict[str, Any]


@dataclass
class Rule:
    """Match on any of: user, group (one of the spec's groups), verb, resource, subresource, namespace,
    name, path (non-resource). ``answer``: "allow", "deny" or "error" (HTTP 500); ``delay`` seconds first."""

    answer: str = "allow"
    user: str | None = None
    group: str | None = None
    verb: str | None = None
    resource: str | None = None
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None
    path: str | None = None
    reason: str = ""
    delay: float = 0.0

    def matches(self, spec: JSON) -> bool:
        attrs = spec.get("resourceAttributes") or spec.get("nonResourceAttributes") or {}
        checks = {
            "verb": attrs.get("verb"),
            "resource": attrs.get("resource"),
            "subresource": attrs.get("subresource"),
            "namespace": attrs.get("namespace"),
            "name": attrs.get("name"),
            "path": attrs.get("path"),
            "user": spec.get("user"),
        }
        for key, actual in checks.items():
            wanted = getattr(self, key)
            if wanted is not None and wanted != (actual or ""):
                return False
        return self.group is None or self.group in (spec.get("groups") or [])


@dataclass
class Reviews:
    tokens: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    token_extra: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    token_reviews: list[JSON] = field(default_factory=list)
    access_reviews: list[JSON] = field(default_factory=list)
    token_error: int | None = None  # answer TokenReviews with this HTTP status

    @classmethod
    def install(cls, fake: FakeKube) -> Reviews:
        reviews = cls()
        fake.add_handler("POST", "/apis/authentication.k8s.io/v1/tokenreviews", reviews._token_review)
        fake.add_handler("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", reviews._access_review)
        return reviews

    def allow(self, **match: Any) -> Rule:
        rule = Rule("allow", **match)
        self.rules.append(rule)
        return rule

    def deny(self, **match: Any) -> Rule:
        rule = Rule("deny", **match)
        self.rules.append(rule)
        return rule

    async def _token_review(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.token_reviews.append(body)
        if self.token_error:
            return status_response(self.token_error, "InternalError", "token review failed")
        token = body.get("spec", {}).get("token", "")
        if not token:
            return status_response(400, "BadRequest", "token is required for TokenReview in authentication")
        # kube-apiserver leaves out what is false or empty: no "authenticated" key, an empty user.
        status: JSON = {"user": {}, "error": "invalid bearer token"}
        if token in self.tokens:
            name, groups = self.tokens[token]
            user: JSON = {"username": name, "uid": f"uid-{name}", "groups": groups}
            if token in self.token_extra:
                user["extra"] = self.token_extra[token]
            status = {"authenticated": True, "user": user, "audiences": ["https://kubernetes.default.svc"]}
        return json_response({**body, "status": status}, status=201)

    async def _access_review(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.access_reviews.append(body)
        spec = body.get("spec", {})
        if bool(spec.get("resourceAttributes")) == bool(spec.get("nonResourceAttributes")):
            which = "nonResourceAttributes" if spec.get("nonResourceAttributes") else "resourceAttributes"
            message = "exactly one of nonResourceAttributes or resourceAttributes must be specified"
            value = "null" if which == "resourceAttributes" else "..."
            cause = {
                "reason": "FieldValueInvalid",
                "message": f'Invalid value: "{value}": {message}',
                "field": f"spec.{which}",
            }
            return status_response(
                422,
                "Invalid",
                f'.authorization.k8s.io "" is invalid: spec.{which}: {cause["message"]}',
                {"group": "authorization.k8s.io", "causes": [cause]},
            )
        rule = next((r for r in self.rules if r.matches(spec)), None)
        if rule is not None and rule.delay:
            await asyncio.sleep(rule.delay)
        if rule is not None and rule.answer == "error":
            return status_response(500, "InternalError", "authorizer failed")
        allowed = rule is not None and rule.answer == "allow"
        status: JSON = {"allowed": allowed}
        if rule is not None and rule.reason:
            status["reason"] = rule.reason
        if rule is not None and rule.answer == "deny":
            status["denied"] = True
        return json_response({**body, "status": status}, status=201)
