"""Routes answered ahead of aiohttp's router: their table, and how a request finds its route.

A warm expand request is a dictionary look-up and a copy of cached bytes, while aiohttp's routing (walking
the URL's prefixes through its resource index, awaiting each candidate) costs about as much again. So
the pipeline (:mod:`apiserver.http.pipeline`) first looks for the request here: one regular expression per
route, built from the very template the router registers and with the router's notion of a variable
(``[^{}/]+``), on the path as parsed once (:mod:`apiserver.http.target`). Anything else goes to the
application: other paths and methods (so 404 and 405 stay aiohttp's), ``Expect`` (answered by the
router's expect handler) and targets aiohttp reads otherwise than kube-apiserver (escapes: the pipeline
has them routed by the router as their decoded path).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from aiohttp import web

Handler = Callable[[web.Request, Mapping[str, str]], Awaitable[web.StreamResponse]]
AnswerNow = Callable[[web.Request, Mapping[str, str]], web.StreamResponse | None]
AnswerAfterBody = Callable[[web.Request, Mapping[str, str]], Awaitable[web.StreamResponse | None]]

_VARIABLE = re.compile(r"\{(\w+)\}")
# Clients repeat their request targets: (method, raw target) -> what matched; at most this
# many, of targets at most this long. Without it a warm GET on the folder source costs 1.10x the server CPU
# (hack/benchmarks/switches.py, route-memo; PUT and the cluster source 0.89-0.97x, within that run's noise),
# and removing it cost 1.12x on the folder GET in hack/benchmarks/commits.py (5 rounds, before and after).
_MATCHED_MAX = 4096
_MATCHED_TARGET_MAX = 512


@dataclass(frozen=True, slots=True)
class FastRoute:
    """One endpoint answered ahead of the router: its method, its path template (also its metrics label)
    and its handler, which takes the template's variables as an argument rather than from
    ``request.match_info``; ``answer_now``, when given, answers synchronously what it can (an answer
    equal to the handler's), else returns None; ``answer_after_body`` likewise, awaiting nothing but the
    request body."""

    method: str
    template: str
    handler: Handler
    answer_now: AnswerNow | None = None
    answer_after_body: AnswerAfterBody | None = None


def template_pattern(template: str) -> re.Pattern[str]:
    """The full-match pattern of a route template, variables as aiohttp's router matches them."""
    pattern, last = "", 0
    for var in _VARIABLE.finditer(template):
        pattern += re.escape(template[last : var.start()]) + f"(?P<{var.group(1)}>[^{{}}/]+)"
        last = var.end()
    return re.compile(pattern + re.escape(template[last:]))


class RouteTable:
    """The fast routes by method, each with its pattern."""

    def __init__(self, routes: Iterable[FastRoute]) -> None:
        self._routes: dict[str, tuple[tuple[re.Pattern[str], FastRoute], ...]] = {}
        for route in routes:
            entry = (template_pattern(route.template), route)
            self._routes[route.method] = (*self._routes.get(route.method, ()), entry)
        self._matched: dict[tuple[str, str], tuple[FastRoute, dict[str, str]]] = {}

    def match(self, request: web.BaseRequest, path: str) -> tuple[FastRoute, dict[str, str]] | None:
        """The route of ``request``, whose path (parsed once: :mod:`apiserver.http.target`) is
        ``path``, and its variables (shared by requests for the same target: read them only)."""
        key = (request.method, request.raw_path)
        known = self._matched.get(key)
        if known is not None:
            return known
        found = self._match(request.method, path)
        # Only targets of a route (any other goes to the router, which costs far more), in bounded memory
        # (at most this much per entry, this many entries), and once full, kept as it is:
        # a target's match never changes, and a memo cleared whenever full, under more targets than it
        # holds (GET of random VMs among 30,000), would only add to every request the work of refilling
        # it and of the garbage collector's passes over the entries it keeps making.
        if found is not None and len(key[1]) <= _MATCHED_TARGET_MAX and len(self._matched) < _MATCHED_MAX:
            self._matched[key] = found
        return found

    def _match(self, method: str, path: str) -> tuple[FastRoute, dict[str, str]] | None:
        routes = self._routes.get(method)
        if routes is None:
            return None
        for pattern, route in routes:
            found = pattern.fullmatch(path)
            if found is not None:
                return route, found.groupdict()
        return None
