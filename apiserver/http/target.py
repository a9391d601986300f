"""A request's path, parsed once: what routing, authorization, the scope and the access log all read.

kube-apiserver reads a request's path the way Go's net/http parses the request target
(``url.ParseRequestURI``): every escape is decoded, ``%2F`` included, so
``virtualmachines/vm-a%2Fexpand-spec/launch-spec`` means ``virtualmachines/vm-a/expand-spec/launch-spec``
to its RequestInfoFactory (authorization) and to its router alike, and a target that does not decode (an
invalid escape) is answered 400 before anything else. aiohttp reads one target two ways: its router
matches the path with ``%2F`` and ``%25`` still encoded (``rel_url.path_safe``), while ``request.path``
decodes them; a segment ``vm-a%2Fexpand-spec`` was one name to the router and two segments to
authorization. Here the target is parsed once, as Go parses it (:func:`parse_target`), the pipeline
routes a request whose target carries an escape (or anything aiohttp reads otherwise) as its decoded
path (:meth:`Target.rerouted`), and every layer reads that one :class:`Target`
(:func:`apiserver.http.keys.target_of`): the authentication filter authorizes its path, the scope comes
from the attributes of that path, and the access log writes the target as received.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from yarl import URL

from apiserver.http.errors import StatusError
from apiserver.render.kubernetes.errors import status

# A "%" not followed by two hexadecimal digits: Go's url.unescape refuses the target.
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# What stays unescaped when a decoded path is written as a target again (RFC 3986's pchar and "/"):
# "%" itself, "?", "#" and anything else are escaped, so a router reads each segment back as it was.
_PATH_SAFE = "/!$&'()*+,;=:@-._~"


@dataclass(frozen=True, slots=True)
class Target:
    """``raw``: the path as received (no query); ``path``: decoded once, as kube-apiserver reads it;
    ``query``: the query as received (after the first ``?``)."""

    raw: str
    path: str
    query: str = ""
    # Nothing aiohttp could read otherwise (origin-form, no escape, no "#"): routed as it came, and
    # known without comparing (the usual request; the pipeline asks for every one).
    plain: bool = False

    def rerouted(self, routed_path: str) -> URL | None:
        """The relative URL to route this request by, when aiohttp would read ``routed_path`` (its
        ``rel_url.path``) or the raw target otherwise than ``path``; None when it reads the same."""
        if self.plain or self.raw == self.path == routed_path:
            return None
        return URL.build(path=quote(self.path, safe=_PATH_SAFE), query_string=self.query, encoded=True)


def bad_target(message: str) -> StatusError:
    """The 400 a target Go's server would not parse gets (it answers ``400 Bad Request`` before any
    handler; here a Status saying why)."""
    return StatusError(status(400, "BadRequest", message))


def parse_target(target: str) -> Target:
    """``target`` (``request.raw_path``: the request target as received, query included) parsed as Go's
    ``url.ParseRequestURI`` parses it: the query is what follows the first ``?``; an absolute URI's path
    is what follows its authority; the path is decoded once (``%2F`` too; bytes that are not UTF-8 read
    as U+FFFD, which no name holds). Raises :class:`StatusError` (400) for an invalid escape."""
    raw, _, query = target.partition("?")
    if raw.startswith("/") and "%" not in raw and "#" not in raw:
        return Target(raw, raw, query, plain=True)
    if not raw.startswith("/") and "://" in raw:  # absolute-form: https://host:port/path
        after = raw.partition("://")[2]
        slash = after.find("/")
        raw = after[slash:] if slash >= 0 else "/"
    if "%" not in raw:
        return Target(raw, raw, query)
    bad = _BAD_ESCAPE.search(raw)
    if bad is not None:
        escape = raw[bad.start() : bad.start() + 3]
        raise bad_target(f'invalid URL escape "{escape}"')
    return Target(raw, unquote(raw, errors="replace"), query)
