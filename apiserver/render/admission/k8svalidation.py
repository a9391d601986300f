"""The Kubernetes validation helpers KubeVirt's webhook calls, with their exact messages.

Mirrors ``k8s.io/apimachinery/pkg/util/validation`` (``IsDNS1123Label``, ``IsDNS1123Subdomain``,
``IsQualifiedName``, ``IsValidLabelValue``, ``IsValidPortName``), ``.../util/validation/field``
(``Error.Error``: ``<field>: <Type>: <value>: <detail>``) and ``.../apis/meta/v1/validation``
(``ValidateLabelSelector``, ``ValidateLabelName``, ``ValidateLabels``). Go's regexp ``$`` matches only
at the end of the text, so every pattern is matched with ``fullmatch``; lengths are in UTF-8 bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from apiserver.render.golang.gotext import go_json, go_quote

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
_QNAME_RE = re.compile(_QNAME_FMT)
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character"
)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character"
)
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_PORT_NAME_CHARSET = re.compile("[-a-z0-9]+")
_PORT_NAME_LETTER = re.compile("[a-z]")


def _blen(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if _blen(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if _blen(value) > 253:
        errs.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _blen(name) > 63:
        errs.append("name part " + max_len_error(63))
    if not _QNAME_RE.fullmatch(name):
        errs.append("name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if _blen(value) > 63:
        errs.append(max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_valid_port_name(port: str) -> list[str]:
    errs = []
    if _blen(port) > 15:
        errs.append(max_len_error(15))
    if not _PORT_NAME_CHARSET.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


# ---------------------------------------------------------------- field.Error


class NamedString(str):
    """A value of a named Go string type (``NodeSelectorOperator``, ``UnsatisfiableConstraintAction``):
    ``field.Error`` prints only a plain ``string`` with ``%q``; any other type goes through
    ``json.Marshal`` (so ``<`` is ``\u003c`` and a control character ``\u0001``)."""

    __slots__ = ()


def _go_value(value: Any) -> str:
    """``field.Error``'s rendering of a bad value: ``%q`` for strings, ``%v`` for numbers, JSON otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if type(value) is NamedString:
        return go_json(str(value))
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class FieldError:
    """One ``field.Error``: ``str()`` is its ``Error()`` text."""

    __slots__ = ("body", "field")

    def __init__(self, field: str, body: str) -> None:
        self.field = field
        self.body = body

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"


def _with_detail(body: str, detail: str) -> str:
    return f"{body}: {detail}" if detail else body


def field_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(field, _with_detail(f"Invalid value: {_go_value(value)}", detail))


def field_required(field: str, detail: str) -> FieldError:
    return FieldError(field, _with_detail("Required value", detail))


def field_forbidden(field: str, detail: str) -> FieldError:
    return FieldError(field, _with_detail("Forbidden", detail))


def field_duplicate(field: str, value: Any) -> FieldError:
    return FieldError(field, f"Duplicate value: {_go_value(value)}")


def field_not_supported(field: str, value: Any, valid: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid) if valid else ""
    return FieldError(field, _with_detail(f"Unsupported value: {_go_value(value)}", detail))


# ---------------------------------------------------------------- apis/meta/v1/validation


def validate_label_name(name: str, path: str) -> list[FieldError]:
    return [field_invalid(path, name, msg) for msg in is_qualified_name(name)]


def validate_labels(labels: Mapping[str, str] | None, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in (labels or {}).items():
        errs.extend(validate_label_name(key, path))
        errs.extend(field_invalid(path, value, msg) for msg in is_valid_label_value(value))
    return errs


def validate_label_selector(selector: Mapping[str, Any] | None, path: str) -> list[FieldError]:
    """``ValidateLabelSelector`` with the default options (unknown operators and bad values refused)."""
    if selector is None:
        return []
    errs = validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(selector.get("matchExpressions") or ()):
        at = f"{path}.matchExpressions[{i}]"
        operator = expr.get("operator", "")
        values = expr.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(
                    field_required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    field_forbidden(
                        f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    )
                )
        else:
            errs.append(
                field_invalid(f"{at}.operator", NamedString(operator), "not a valid selector operator")
            )
        errs.extend(validate_label_name(expr.get("key", ""), f"{at}.key"))
        for j, value in enumerate(values):
            errs.extend(field_invalid(f"{at}.values[{j}]", value, msg) for msg in is_valid_label_value(value))
    return errs
