"""The fields behind the webhook's causes that name none, so that ``--validate`` findings have lines too.

KubeVirt's VM webhook words two of its refusals without a field, and the Status keeps KubeVirt's words:

- the schema stage (go-openapi) gives causes with a message only, the path written into it without list
  indices (``spec.template.spec.domain.devices.disks.disk.buss in body is a forbidden property``);
- its ``json.Unmarshal`` failure is a 400 without causes (``... Go struct field
  VMISpecAlias.domain.devices.disks.0.bootOrder of type uint``), the path relative to an alias type.

Without ``--validate`` the same problems are field validation's or the rendering decoder's causes, with
their fields. A CI report wants the same field and line either way, so :func:`placed_causes` gives the
report's causes (never the Status) the field each message is about, found in the VM as sent: each place a
schema message applies to (it is given once for every list item it covers), and the decoder's own path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from apiserver.render.golang.gojson import GoDecodeError, decode
from apiserver.render.kubernetes.errors import (
    CAUSE_NOT_SUPPORTED,
    CAUSE_REQUIRED,
    CAUSE_TYPE_INVALID,
    CAUSE_UNKNOWN_FIELD,
)

# go-openapi's messages (apiserver/render/admission/schema.py writes them as it does).
_SCHEMA = re.compile(
    r"(?P<path>.*?) in body (?:"
    r"(?P<forbidden>is a forbidden property)"
    r"|(?P<required>is required)"
    r'|must be of type [^:]+: "(?P<got>.*)"'
    r"|should be one of \[(?P<enum>.*)\]"
    r")",
    re.DOTALL,
)
# A path segment written as ``.name`` (others, such as label keys, as ``[key]``, as Kubernetes writes them).
_PLAIN = re.compile(r"[A-Za-z0-9_$-]+")
# Places given for one cause at most: a message repeated over thousands of list items stays readable.
MAX_PLACES = 10


def placed_causes(vm: Mapping[str, Any], status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's causes of ``status`` (a refusal of ``vm``): the Status's causes, each field-less one
    of the webhook's schema stage given once per place it is about, with that field and the reason its
    message says; for the webhook's decode failure (no causes) one cause at the decoder's path. ``[]``
    when there is nothing to add (the report then takes the Status's causes as they are)."""
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    if not isinstance(causes, list):
        causes = []
    if not causes:
        return _decode_cause(vm, status)
    if all(not isinstance(c, Mapping) or c.get("field") for c in causes):
        return []
    placed: list[dict[str, Any]] = []
    for cause in causes:
        if not isinstance(cause, Mapping):
            continue
        message = cause.get("message")
        found = _SCHEMA.fullmatch(message) if not cause.get("field") and isinstance(message, str) else None
        if found is None:
            placed.append(dict(cause))
            continue
        reason = cause.get("reason") or _reason(found)
        fields = _fields(vm, found)
        if not fields:  # the path as written: a line for its nearest ancestor at least
            fields = [found["path"].lstrip(".")]
        placed.extend({**cause, "reason": reason, "field": field} for field in fields)
    return placed


def _decode_cause(vm: Mapping[str, Any], status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The webhook's 400 for a VM Go cannot decode names no field; the rendering's decoder knows it."""
    if status.get("code") != 400 or not isinstance(status.get("details"), Mapping):
        return []
    try:
        decode(vm, "VirtualMachine")
    except GoDecodeError as failed:
        if failed.path:
            message = str(status.get("message", ""))
            return [{"reason": CAUSE_TYPE_INVALID, "message": message, "field": failed.path}]
    except Exception:
        return []
    return []


def _reason(found: re.Match[str]) -> str:
    if found["forbidden"]:
        return CAUSE_UNKNOWN_FIELD
    if found["required"]:
        return CAUSE_REQUIRED
    if found["enum"] is not None:
        return CAUSE_NOT_SUPPORTED
    return CAUSE_TYPE_INVALID


def _fields(vm: Mapping[str, Any], found: re.Match[str]) -> list[str]:
    """Where in ``vm`` the message applies: list items the path covers expanded, values that break the
    rule preferred over those that merely sit at the path."""
    path = found["path"].lstrip(".")
    if found["required"]:
        parent, _, missing = path.rpartition(".")
        holders = _at(vm, parent, []) if parent else iter([([], vm)])
        places = [
            [*trail, missing]
            for trail, value in holders
            if isinstance(value, Mapping) and missing not in value
        ]
        return [_field(p) for p in places[:MAX_PLACES]]
    candidates = list(_at(vm, path, []))
    if found["got"] is not None:
        got = found["got"]
        wrong = [c for c in candidates if got in _kinds(c[1])]
    elif found["enum"] is not None:
        allowed = set(found["enum"].split(" "))
        wrong = [c for c in candidates if not isinstance(c[1], Mapping | list) and str(c[1]) not in allowed]
    else:
        wrong = [c for c in candidates if c[0] and not isinstance(c[0][-1], int)]  # the key itself
    return [_field(trail) for trail, _ in (wrong or candidates)[:MAX_PLACES]]


def _at(node: Any, rest: str, trail: list[str | int]) -> Iterator[tuple[list[str | int], Any]]:
    """Every (trail, value) at the index-less dotted ``rest`` below ``node``: a list's items are under
    the list's own path (as go-openapi checks them), and a key may hold dots itself."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _at(item, rest, [*trail, i])
        return
    if not isinstance(node, Mapping):
        return
    for key, value in node.items():
        if not isinstance(key, str):
            continue
        if rest == key:
            yield [*trail, key], value
            if isinstance(value, list):
                yield from _items(value, [*trail, key])
        elif rest.startswith(key + "."):
            yield from _at(value, rest[len(key) + 1 :], [*trail, key])


def _items(values: list[Any], trail: list[str | int]) -> Iterator[tuple[list[str | int], Any]]:
    for i, item in enumerate(values):
        yield [*trail, i], item
        if isinstance(item, list):
            yield from _items(item, [*trail, i])


def _kinds(value: Any) -> set[str]:
    """What go-openapi's type messages quote for ``value``: its JSON type, its format, or itself."""
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, str):
        return {"string", value}
    if isinstance(value, int | float):
        return {"number", "float64"}
    if isinstance(value, list):
        return {"array"}
    return {"object"} if isinstance(value, Mapping) else set()


def _field(trail: list[str | int]) -> str:
    """A trail as Kubernetes writes a field: ``a.b[0].c``, ``labels[app.kubernetes.io/name]``."""
    out = ""
    for segment in trail:
        if isinstance(segment, int):
            out += f"[{segment}]"
        elif _PLAIN.fullmatch(segment):
            out += f".{segment}" if out else segment
        else:
            out += f"[{segment}]"
    return out
