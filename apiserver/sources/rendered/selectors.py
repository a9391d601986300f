"""Label and field selectors as list and watch take them (``?labelSelector=``, ``?fieldSelector=``).

The label selector syntax is apimachinery's ``labels.Parse``: requirements joined by commas, each
``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``, ``key in (a,b)``, ``key notin (a,b)``,
``key>N`` or ``key<N``; keys and values validated as label keys and values are. The field selector
takes ``metadata.name`` and ``metadata.namespace`` with ``=``, ``==`` or ``!=``, as kube-apiserver
takes them for a custom resource, and the drift fields (:data:`FIELDS`): ``status.stale`` (``true`` or
``false``), ``spec.instancetype.name``/``.kind`` and ``spec.preference.name``/``.kind`` (a kind in any
spelling a matcher accepts, compared canonical; a VM without the matcher has ``""``), each also by the
path the item shows it at (``summary.stale``, ``summary.instancetype.name``, ...). A bad selector
is :class:`SelectorError` with kube-apiserver's wording, answered 400 BadRequest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from apiserver.render.admission.k8svalidation import is_qualified_name, is_valid_label_value
from apiserver.render.golang.gotext import go_lower
from apiserver.render.instancetype.find import INSTANCETYPE_FAMILY, PREFERENCE_FAMILY
from apiserver.render.objects import canonical_kind

KEY_FIELDS = ("metadata.name", "metadata.namespace")
STALE = "status.stale"
# The fields an item carries beyond its key (apiserver.sources.rendered.items.selectable).
ITEM_FIELDS = (
    STALE,
    "spec.instancetype.name",
    "spec.instancetype.kind",
    "spec.preference.name",
    "spec.preference.kind",
)
# Where the item shows each (its summary), taken as the same field: a selector may name either.
ITEM_PATHS = {
    STALE: "summary.stale",
    "spec.instancetype.name": "summary.instancetype.name",
    "spec.instancetype.kind": "summary.instancetype.kind",
    "spec.preference.name": "summary.preference.name",
    "spec.preference.kind": "summary.preference.kind",
}
_ALIASES = {path: field for field, path in ITEM_PATHS.items()}
FIELDS = KEY_FIELDS + ITEM_FIELDS
_KINDS = {
    "spec.instancetype.kind": INSTANCETYPE_FAMILY.kinds,
    "spec.preference.kind": PREFERENCE_FAMILY.kinds,
}
_NO_FIELDS: Mapping[str, str] = {}


class SelectorError(ValueError):
    """The selector cannot be parsed; the message is what the 400 says."""


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str  # in, notin, exists, !, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "in":
            return labels.get(self.key) in self.values
        if op == "notin":
            return labels.get(self.key) not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        value = labels.get(self.key)
        try:
            number = int(value) if value is not None else None
        except ValueError:
            return False
        if number is None:
            return False
        bound = int(self.values[0])
        return number > bound if op == "gt" else number < bound


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if not self.requirements:
            return True
        found = labels or {}
        return all(r.matches(found) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


EVERYTHING = LabelSelector()

_SET = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_COMPARE = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s*(?P<op>==|=|!=|<|>)\s*(?P<value>[^\s!=<>(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(?P<not>!?)\s*(?P<key>[^\s!=<>(),]+)\s*$")


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _check_key(key: str) -> None:
    errors = is_qualified_name(key)
    if errors:
        raise SelectorError(f'unable to parse requirement: key: Invalid value: "{key}": {"; ".join(errors)}')


def _check_value(key: str, index: int, value: str) -> None:
    errors = is_valid_label_value(value)
    if errors:
        raise SelectorError(
            f'unable to parse requirement: values[{index}][{key}]: Invalid value: "{value}": '
            + "; ".join(errors)
        )


def parse_label_selector(text: str) -> LabelSelector:
    """``labels.Parse``; the empty text selects everything."""
    if not text.strip():
        return EVERYTHING
    requirements: list[LabelRequirement] = []
    for part in _split(text):
        if not part.strip():
            raise SelectorError(f"found '', expected: identifier in label selector {text!r}")
        found = _SET.match(part)
        if found:
            key = found["key"]
            _check_key(key)
            values = tuple(v.strip() for v in found["values"].split(",") if v.strip())
            if not values:
                raise SelectorError(
                    f"unable to parse requirement: values: Invalid value: null: for 'in', 'notin' "
                    f"operators, values set can't be empty (in {part.strip()!r})"
                )
            for i, value in enumerate(values):
                _check_value(key, i, value)
            requirements.append(LabelRequirement(key, found["op"], values))
            continue
        found = _COMPARE.match(part)
        if found:
            key, op, value = found["key"], found["op"], found["value"]
            _check_key(key)
            if op in ("<", ">"):
                if not re.fullmatch(r"-?\d+", value):
                    raise SelectorError(
                        f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an "
                        f"integer: {value!r}"
                    )
                requirements.append(LabelRequirement(key, "gt" if op == ">" else "lt", (value,)))
                continue
            _check_value(key, 0, value)
            requirements.append(LabelRequirement(key, "notin" if op == "!=" else "in", (value,)))
            continue
        found = _EXISTS.match(part)
        if found:
            key = found["key"]
            _check_key(key)
            requirements.append(LabelRequirement(key, "!" if found["not"] else "exists"))
            continue
        raise SelectorError(f"unable to parse requirement: {part.strip()!r} in label selector {text!r}")
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """Requirements on :data:`FIELDS`: (field, wanted, equal)."""

    requirements: tuple[tuple[str, str, bool], ...] = ()

    def matches(self, namespace: str, name: str, fields: Mapping[str, str] | None = None) -> bool:
        """Whether an item with this key and these selectable fields (``items.selectable``) is selected."""
        found = _NO_FIELDS if fields is None else fields
        for field, wanted, equal in self.requirements:
            if field == "metadata.name":
                value = name
            elif field == "metadata.namespace":
                value = namespace
            else:
                value = found.get(field, "")
            if (value == wanted) != equal:
                return False
        return True

    @property
    def reads_drift(self) -> bool:
        """Whether it selects on ``status.stale``, which a caller shown an item redacted may not learn."""
        return any(field == STALE for field, _, _ in self.requirements)

    def name(self) -> str | None:
        """The one name an equality on ``metadata.name`` asks for (a list of one item), if any."""
        for field, wanted, equal in self.requirements:
            if field == "metadata.name" and equal:
                return wanted
        return None

    def namespace(self) -> str | None:
        for field, wanted, equal in self.requirements:
            if field == "metadata.namespace" and equal:
                return wanted
        return None


ALL_FIELDS = FieldSelector()
_FIELD = re.compile(r"^\s*(?P<field>[^\s!=]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s,]*)\s*$")


def _value(field: str, value: str) -> str:
    """The value as items carry it: ``status.stale`` true or false, a kind canonical."""
    if field == STALE:
        if value not in ("true", "false"):
            raise SelectorError(
                f'invalid value for field selector "{STALE}": "{value}": must be true or false'
            )
        return value
    kinds = _KINDS.get(field)
    if kinds is not None and value:
        return canonical_kind(kinds.get(value) or kinds.get(go_lower(value)) or value)
    return value


def parse_field_selector(text: str) -> FieldSelector:
    """``fields.ParseSelector`` restricted to the fields this collection can select on."""
    if not text.strip():
        return ALL_FIELDS
    requirements = []
    for part in text.split(","):
        found = _FIELD.match(part)
        if not found:
            raise SelectorError(f"invalid selector: {text!r}; can't understand {part.strip()!r}")
        field = _ALIASES.get(found["field"], found["field"])
        if field not in FIELDS:
            known = ", ".join(f'"{f}"' for f in FIELDS)
            raise SelectorError(f'"{field}" is not a known field selector: only {known}')
        requirements.append((field, _value(field, found["value"]), found["op"] != "!="))
    return FieldSelector(tuple(requirements))
