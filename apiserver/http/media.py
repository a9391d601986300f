"""Content negotiation: which representation a client asked for (``Accept``) and how to write it.

Responses are JSON unless ``Accept`` prefers YAML. Clients send ``application/json, */*`` (virtctl,
kubectl) or nothing; a request that accepts neither JSON nor YAML gets 406. Media ranges carrying
``as=``/``g=``/``v=`` parameters ask for a converted kind (``Table``, aggregated discovery); only the
discovery handler offers such kinds, so elsewhere they are passed over.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from aiohttp import web
from multidict import CIMultiDict

from apiserver.documents.reader import KubeDumper
from apiserver.http.errors import not_acceptable

JSON = "application/json"
YAML = "application/yaml"
OFFERS = (JSON, YAML)


@dataclass(frozen=True, slots=True)
class MediaRange:
    """One entry of an ``Accept`` header."""

    type: str
    subtype: str
    params: Mapping[str, str]
    q: float

    @property
    def converted(self) -> bool:
        """True when the range asks for a server-side conversion (``as=Table``, discovery kinds)."""
        return any(key in self.params for key in ("as", "g", "v"))

    def matches(self, media_type: str) -> bool:
        kind, _, sub = media_type.partition("/")
        return (self.type in ("*", kind)) and (self.subtype in ("*", sub))


def parse_accept(header: str | None) -> list[MediaRange]:
    """The ranges of an ``Accept`` header, best first (ties keep the client's order); q=0 dropped."""
    ranges: list[MediaRange] = []
    for part in (header or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        kind, _, sub = fields[0].lower().partition("/")
        params: dict[str, str] = {}
        q = 1.0
        for field in fields[1:]:
            key, _, value = field.partition("=")
            key, value = key.strip().lower(), value.strip().strip('"')
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            elif key:
                params[key] = value
        if q > 0:
            ranges.append(MediaRange(kind, sub or "*", params, q))
    ranges.sort(key=lambda r: -r.q)
    return ranges


# Clients send the same few Accept headers over and over: remember what each negotiated to. Without it a
# warm GET costs 1.22x the server CPU (folder source) and 1.20x (cluster source); PUT 0.90-0.95x, within the
# noise (hack/benchmarks/switches.py, negotiation-memo).
_NEGOTIATED: dict[tuple[str, tuple[str, ...]], str] = {}
_NEGOTIATED_MAX = 256


def negotiate(request: web.Request, offers: Iterable[str] = OFFERS) -> str:
    """The media type to answer with; raises a 406 Status when none of ``offers`` is acceptable."""
    offered = offers if isinstance(offers, tuple) else tuple(offers)
    header = request.headers.get("Accept", "")
    known = _NEGOTIATED.get((header, offered))
    if known is not None:
        return known
    chosen = _negotiate(header, offered)
    if len(_NEGOTIATED) >= _NEGOTIATED_MAX:
        _NEGOTIATED.clear()
    _NEGOTIATED[(header, offered)] = chosen
    return chosen


def _negotiate(header: str, offered: tuple[str, ...]) -> str:
    if not header.strip():
        return offered[0]
    for media_range in parse_accept(header):
        if media_range.converted:
            continue
        for offer in offered:
            if media_range.matches(offer):
                return offer
    raise not_acceptable(offered)


def encode(obj: Any, media_type: str) -> bytes:
    """Compact JSON (orjson), or block-style YAML in the object's own member order."""
    if media_type == YAML:
        text: str = yaml.dump(
            obj, Dumper=KubeDumper, sort_keys=False, default_flow_style=False, allow_unicode=True
        )
        return text.encode()
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        # An integer beyond 64 bits (kept exactly from a JSON body's fieldsV1): the standard library
        # writes it as it was given.
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def respond(
    obj: Any,
    media_type: str,
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    return web.Response(status=status, body=encode(obj, media_type), content_type=media_type, headers=headers)


def etag_of(body: bytes) -> str:
    """A strong validator computed from the exact response bytes."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _if_none_match(header: str, etag: str) -> bool:
    """Weak comparison, as RFC 9110 prescribes for ``If-None-Match``."""
    bare = etag.removeprefix("W/")
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == bare:
            return True
    return False


def respond_cacheable(
    request: web.Request,
    body: bytes,
    content_type: str,
    *,
    headers: Iterable[tuple[str, str]] = (),
) -> web.Response:
    """200 with an ``ETag``, or 304 when the client's ``If-None-Match`` already has these bytes.

    ``headers`` may repeat a name (several ``Warning`` headers).
    """
    return respond_tagged(request, body, content_type, etag_of(body), headers=headers)


_TAGGED = frozenset(("etag", "vary", "content-type"))


def tagged_pairs(
    etag: str, content_type: str | None, headers: Iterable[tuple[str, str]] = ()
) -> tuple[tuple[str, str], ...]:
    """The headers of :func:`respond_tagged`'s answer (a 304 has no ``Content-Type``): ``headers``
    (but for the ones set here), then ``ETag``, ``Vary`` and ``Content-Type``. Pairs, not a
    ``CIMultiDict``: the Response makes its own of them (one copy instead of two; 1.44 against 1.69 us
    a Response, timed in process)."""
    tagged: tuple[tuple[str, str], ...] = (("ETag", etag), ("Vary", "Accept"))
    if content_type is not None:
        tagged += (("Content-Type", content_type),)
    if not headers:
        return tagged
    return (*(pair for pair in headers if pair[0].lower() not in _TAGGED), *tagged)


def tagged_headers(
    etag: str, content_type: str | None, headers: Iterable[tuple[str, str]] = ()
) -> CIMultiDict[str]:
    """:func:`tagged_pairs` as a ``CIMultiDict``, for a caller that keeps them for many answers."""
    return CIMultiDict(tagged_pairs(etag, content_type, headers))


def respond_tagged(
    request: web.Request,
    body: bytes,
    content_type: str,
    etag: str,
    *,
    headers: Iterable[tuple[str, str]] = (),
    prebuilt: CIMultiDict[str] | None = None,
) -> web.Response:
    """:func:`respond_cacheable` with the ``ETag`` of ``body`` already computed; ``prebuilt``: the
    200's headers from :func:`tagged_headers` for these arguments, kept by the caller."""
    match = request.headers.get("If-None-Match")
    if match and _if_none_match(match, etag):
        return web.Response(status=304, headers=tagged_pairs(etag, None, headers))
    return web.Response(body=body, headers=prebuilt or tagged_pairs(etag, content_type, headers))


# ``?pretty`` and the User-Agent rule, as k8s.io/apiserver's ``negotiation.isPrettyPrint`` decides them.
_GO_TRUE = frozenset(("1", "t", "T", "TRUE", "true", "True"))  # strconv.ParseBool; anything else: false
_HUMAN_AGENTS = ("curl", "Wget", "Mozilla/5.0")


def pretty_wanted(request: web.BaseRequest) -> bool:
    """Whether to indent a JSON answer: a non-empty ``?pretty=`` decides (Go's ``strconv.ParseBool``,
    an unparsable value meaning false, never an error); otherwise a curl, Wget or browser
    ``User-Agent`` asks for it, as kube-apiserver does."""
    if "pretty" in request.query_string:
        value = request.query.get("pretty", "")
        if value:
            return value in _GO_TRUE
    agent = request.headers.get("User-Agent")
    return agent is not None and agent.startswith(_HUMAN_AGENTS)


_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^"{}\[\],:\s]+|\s+')


def indent_json(body: bytes) -> bytes:
    """``body`` as Go's ``json.MarshalIndent(v, "", "  ")`` writes it (what kube-apiserver sends for
    ``?pretty=true``): one member or element per line, ``{}`` and ``[]`` kept empty, strings untouched."""
    out: list[bytes] = []
    append = out.append
    depth = 0
    opened = False  # an object or array has just opened: indent unless it closes at once
    for found in _TOKENS.finditer(body):
        token = found.group()
        if token[0] in b" \t\r\n":
            continue
        closing = token in (b"}", b"]")
        if opened and not closing:
            opened = False
            depth += 1
            append(b"\n" + b"  " * depth)
        if token in (b"{", b"["):
            opened = True
            append(token)
        elif token == b",":
            append(b",\n" + b"  " * depth)
        elif token == b":":
            append(b": ")
        elif closing:
            if opened:
                opened = False
            else:
                depth -= 1
                append(b"\n" + b"  " * depth)
            append(token)
        else:
            append(token)
    return b"".join(out)


def prettify(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """Indent a JSON answer in place when the client asked for it (:func:`pretty_wanted`). Its
    ``ETag`` becomes weak: the same JSON, other bytes."""
    if not isinstance(response, web.Response) or not pretty_wanted(request):
        return
    body = response.body
    if response.status != 304:
        if not isinstance(body, bytes) or not body or response.content_type != JSON:
            return
        response.body = indent_json(body)
    etag = response.headers.get("ETag")
    if etag is not None and not etag.startswith("W/"):
        response.headers["ETag"] = "W/" + etag
