"""``metav1.LabelSelectorAsSelector`` and label matching, with apimachinery's exact error texts.

A preset's selector is not validated when the preset is created, so a broken one only shows up when a
VMI is created: the conversion error then fails the whole preset step with apimachinery's message,
which users may already know from KubeVirt's events. We reproduce that text exactly and add, for our
own Status causes, where in the selector the problem is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from apiserver.render.admission.k8svalidation import is_qualified_name, is_valid_label_value
from apiserver.render.golang.gotext import aggregate, go_json, go_quote

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One problem in a selector: ``where`` is its path inside ``spec.selector`` (for our causes),
    ``text`` apimachinery's ``field.Error`` text, ``body`` the same without apimachinery's field."""

    where: str
    text: str
    body: str


class SelectorError(Exception):
    """The selector cannot be converted; ``message`` is apimachinery's error text, unchanged."""

    def __init__(self, message: str, problems: Sequence[FieldProblem]) -> None:
        super().__init__(message)
        self.message = message
        self.problems = list(problems)


class MalformedSelector(Exception):
    """The selector does not even have the shape of a ``LabelSelector`` (Go could not decode it)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present  # DoesNotExist


@dataclass(frozen=True, slots=True)
class Selector:
    """A converted selector; no requirements matches everything (the empty selector ``{}``)."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"


def _new_requirement(key: str, operator: str, values: list[str], where: str, *, equals: bool) -> Requirement:
    """``labels.NewRequirement``: validate key, operator arity and values, all errors aggregated."""
    problems: list[FieldProblem] = []

    def invalid(field: str, bad: str, detail: str, at: str) -> None:
        body = f"Invalid value: {bad}: {detail}"
        problems.append(FieldProblem(at, f"{field}: {body}", body))

    key_errors = is_qualified_name(key)
    if key_errors:
        invalid("key", go_quote(key), "; ".join(key_errors), where if equals else f"{where}.key")
    bad_values = go_json(values) if values else "null"
    if equals:
        pass  # matchLabels always give exactly one value
    elif operator in ("In", "NotIn"):
        if not values:
            invalid(
                "values",
                bad_values,
                "for 'in', 'notin' operators, values set can't be empty",
                f"{where}.values",
            )
    elif values:
        invalid(
            "values", bad_values, "values set must be empty for exists and does not exist", f"{where}.values"
        )
    for index, value in enumerate(values):
        value_errors = is_valid_label_value(value)
        if value_errors:
            at = where if equals else f"{where}.values[{index}]"
            invalid(f"values[{index}][{key}]", go_quote(value), "; ".join(value_errors), at)
    if problems:
        # ErrorList.ToAggregate drops repeated texts before aggregating.
        unique: list[FieldProblem] = []
        for problem in problems:
            if all(problem.text != seen.text for seen in unique):
                unique.append(problem)
        raise SelectorError(aggregate(p.text for p in unique), unique)
    return Requirement(key, "In" if equals else operator, tuple(values))


def _string_list(raw: object, where: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise MalformedSelector(where, f"must be a list of strings, not {_type_name(raw)}")
    for index, item in enumerate(raw):
        if not isinstance(item, str):
            raise MalformedSelector(f"{where}[{index}]", f"must be a string, not {_type_name(item)}")
    return list(raw)


def label_selector_as_selector(raw: object) -> Selector:
    """Convert a preset's ``spec.selector`` as ``metav1.LabelSelectorAsSelector`` does.

    A missing or null selector is Go's zero ``LabelSelector``, which selects everything, like ``{}``.
    ``matchLabels`` is a Go map there (random order); we check its keys sorted so the first error
    reported is stable. Raises :class:`SelectorError` or :class:`MalformedSelector`.
    """
    if raw is None:
        return Selector(())
    if not isinstance(raw, Mapping):
        raise MalformedSelector("", f"must be an object (a label selector), not {_type_name(raw)}")
    match_labels = raw.get("matchLabels")
    expressions = raw.get("matchExpressions")
    if match_labels is not None and not isinstance(match_labels, Mapping):
        raise MalformedSelector(
            "matchLabels", f"must be an object of strings, not {_type_name(match_labels)}"
        )
    if expressions is not None and not isinstance(expressions, list):
        raise MalformedSelector("matchExpressions", f"must be a list, not {_type_name(expressions)}")
    requirements: list[Requirement] = []
    for key in sorted(match_labels or {}):
        value = match_labels[key] if match_labels else None
        if not isinstance(value, str):
            raise MalformedSelector(f"matchLabels[{key}]", f"must be a string, not {_type_name(value)}")
        requirements.append(_new_requirement(key, "In", [value], f"matchLabels[{key}]", equals=True))
    for index, expression in enumerate(expressions or []):
        where = f"matchExpressions[{index}]"
        if not isinstance(expression, Mapping):
            raise MalformedSelector(where, f"must be an object, not {_type_name(expression)}")
        key = expression.get("key", "")
        operator = expression.get("operator", "")
        if key is None:
            key = ""
        if operator is None:
            operator = ""
        if not isinstance(key, str):
            raise MalformedSelector(f"{where}.key", f"must be a string, not {_type_name(key)}")
        if not isinstance(operator, str):
            raise MalformedSelector(f"{where}.operator", f"must be a string, not {_type_name(operator)}")
        values = _string_list(expression.get("values"), f"{where}.values")
        if operator not in OPERATORS:
            text = f"{go_quote(operator)} is not a valid label selector operator"
            raise SelectorError(text, [FieldProblem(f"{where}.operator", text, text)])
        requirements.append(_new_requirement(key, operator, values, where, equals=False))
    return Selector(tuple(requirements))
