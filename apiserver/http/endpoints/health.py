"""``/livez``, ``/readyz`` and ``/healthz`` in k8s.io/apiserver's format.

``/livez`` only says the process serves requests; ``/readyz`` adds the source's checks (folder read,
caches synced) and fails while shutting down, so a load balancer stops sending traffic before the
listener closes; ``/healthz`` is the legacy union. ``?verbose`` lists every check, ``?exclude=name``
skips one, ``/readyz/<name>`` runs one.

Anyone may ask (the kubelet's probes carry no credentials), so what a check says beyond its name and
verdict (object counts per cache, the last error of a watch, a file's parse error) is shown only to
authenticated callers: others read ``[+]name ok`` and ``[-]name failed: reason withheld``, as
kube-apiserver withholds its reasons.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aiohttp import web

from apiserver.http.errors import not_found
from apiserver.http.state import ChecksFn, ServerState
from apiserver.sources.base import Check

__all__ = ["ChecksFn", "ServerState", "add_routes", "always", "never"]
# Whether a request may read what the checks say (its caller is authenticated).
DetailsFn = Callable[[web.Request], bool]
WITHHELD = "reason withheld"


def always(_request: web.Request) -> bool:
    return True


def never(_request: web.Request) -> bool:
    return False


def _ping() -> list[Check]:
    return [Check("ping", True)]


def _render(endpoint: str, checks: Sequence[Check], request: web.Request, details: DetailsFn) -> web.Response:
    excluded = set(request.query.getall("exclude", []))
    selected = [c for c in checks if c.name not in excluded]
    healthy = all(c.ok for c in selected)
    verbose = "verbose" in request.query
    if healthy and not verbose:
        return web.Response(text="ok", content_type="text/plain")
    # A passing check with a message (a warning, "not installed") keeps it: "[+]name ok - message".
    shown = details(request)
    lines = [
        (f"[+]{c.name} ok" + (f" - {c.message}" if c.message and shown else ""))
        if c.ok
        else f"[-]{c.name} failed: {(c.message or 'not ready') if shown else WITHHELD}"
        for c in selected
    ]
    lines.extend(f"[+]{name} excluded: ok" for name in sorted(excluded))
    lines.append(f"{endpoint} check passed" if healthy else f"{endpoint} check failed")
    return web.Response(
        status=200 if healthy else 500, text="\n".join(lines) + "\n", content_type="text/plain"
    )


def add_routes(
    app: web.Application, state: ServerState, source_checks: ChecksFn, *, details: DetailsFn = always
) -> None:
    """The three endpoints; ``details``: whether a request may read the checks' messages."""

    def live() -> list[Check]:
        return _ping()

    def ready() -> list[Check]:
        return [*_ping(), *state.checks(), *source_checks()]

    endpoints: dict[str, Callable[[], Sequence[Check]]] = {"livez": live, "readyz": ready, "healthz": ready}
    for endpoint, checks_fn in endpoints.items():

        async def all_checks(
            request: web.Request, endpoint: str = endpoint, fn: ChecksFn = checks_fn
        ) -> web.Response:
            return _render(endpoint, fn(), request, details)

        async def one_check(
            request: web.Request, endpoint: str = endpoint, fn: ChecksFn = checks_fn
        ) -> web.Response:
            name = request.match_info["check"]
            chosen = [c for c in fn() if c.name == name]
            if not chosen:
                raise not_found(f'no health check named "{name}"')
            return _render(endpoint, chosen, request, details)

        app.router.add_get(f"/{endpoint}", all_checks)
        app.router.add_get(f"/{endpoint}/{{check:.+}}", one_check)
