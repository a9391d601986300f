"""The run's verdicts in the formats CI systems read (``-o junit``, ``-o sarif``, ``-o codequality``).

Written once at the end of the run, from the same :class:`~apiserver.cli.report.Result` list as
``-o jsonl``, each finding placed at the file and line of the field its cause names
(:meth:`~apiserver.cli.report.Result.locate`):

- **JUnit XML** (GitLab's ``artifacts:reports:junit``, Jenkins' ``junit`` step): a ``testsuite`` per input
  file, a ``testcase`` per VM and per input problem; a refused or missing VM is a ``failure``, an unresolved one
  (KubeVirt would admit it; what it names was not given) ``skipped``, an input problem an ``error``,
  each with the Status's message and its causes (field and line) as the text.
- **SARIF 2.1.0** (GitHub code scanning's upload, kube-linter's format): one ``result`` per cause of each
  refusal or error (per Status when it has no causes) and per warning, each with a region at its line;
  the rule is the cause's reason (``FieldValueInvalid``...) or the Status's (``AlreadyExists``...).
- **GitLab Code Quality**: a JSON array of issues with ``description``, ``check_name``, ``fingerprint``,
  ``severity`` (``critical`` for input that cannot be judged, ``major`` for a refusal or a missing name, ``minor`` for a
  warning or an unresolved VM; SARIF's level is ``warning`` for those two) and ``location.path``/``location.lines.begin``.

Admitted VMs appear in JUnit (passed test cases) only; the other two list what needs a look. The XML
library is imported by :func:`junit` itself: a run that writes no JUnit (every pre-commit run) starts
without it.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from apiserver.cli.report import ADMITTED, MISSING, REFUSED, UNRESOLVED, Result
from apiserver.documents.manifests import STDIN_SOURCE

JUNIT, SARIF, CODEQUALITY = "junit", "sarif", "codequality"
REPORT_FORMATS = (JUNIT, SARIF, CODEQUALITY)

TOOL = "kubevirt-expand"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# Project-URL labels of the distribution's metadata, in the order one is taken as the tool's page.
_INFORMATION_LABELS = ("documentation", "homepage", "source", "repository")
WARNING_RULE = "Warning"

# Characters XML 1.0 cannot hold (names and messages come from the input).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing to show at one place: a cause of a refusal or error, or a warning."""

    result: Result
    rule: str
    message: str
    line: int | None
    level: str  # SARIF's: error (an input problem or a refusal) or warning
    field: str | None = None

    @property
    def file(self) -> str:
        return self.result.file


def _status_reason(result: Result) -> str:
    reason = (result.status or {}).get("reason")
    return str(reason) if reason else result.outcome


def _prefix(result: Result) -> str:
    label = result.label()
    where = f"document {result.document}" if result.document is not None else ""
    if result.item is not None:
        where += f", items[{result.item}]"
    text = ": ".join(part for part in (where, label) if part)
    return f"[{result.cluster}] {text}" if result.cluster is not None else text


def findings(results: Sequence[Result]) -> Iterator[Finding]:
    """What needs a look, in input order: each cause (else the Status) of every result that is not
    admitted, and every warning."""
    for result in results:
        prefix = _prefix(result)
        if result.outcome != ADMITTED:
            # Unresolved: KubeVirt would admit the VM, what it names was not given (no refusal to report)
            level = "warning" if result.outcome == UNRESOLVED else "error"
            message = result.message()
            if result.causes:
                for cause in result.causes:
                    text = str(cause.get("message") or message)
                    line = cause.get("line")
                    yield Finding(
                        result,
                        str(cause.get("reason") or _status_reason(result)),
                        f"{prefix}: {text}" if prefix else text,
                        line if isinstance(line, int) else result.best_line(),
                        level,
                        cause.get("field") or None,
                    )
            else:
                text = f"{prefix}: {message}" if prefix else message
                yield Finding(result, _status_reason(result), text, result.best_line(), level)
        for warning in result.warnings:
            yield Finding(result, WARNING_RULE, f"{prefix}: {warning}", result.best_line(), "warning")


def write(fmt: str, results: Sequence[Result], version: str) -> str:
    if fmt == JUNIT:
        return junit(results)
    if fmt == SARIF:
        return sarif(results, version)
    return codequality(results)


# --- JUnit XML --------------------------------------------------------------------------------------------


def _case_name(result: Result) -> str:
    return _prefix(result) or result.file


def _failure_text(result: Result) -> str:
    lines = [result.message()]
    for cause in result.causes:
        at = f"{result.file}:{cause['line']}" if cause.get("line") else result.file
        lines.append(f"{at}: {cause.get('field') or '(no field)'}: {cause.get('message', '')}")
    lines.extend(f"warning: {warning}" for warning in result.warnings)
    return "\n".join(lines)


def junit(results: Sequence[Result]) -> str:
    """A ``testsuites`` document, a suite per file in input order (per cluster of the configuration
    file when it names clusters: the same file may be judged in several)."""
    from xml.etree import ElementTree  # imported when first needed (module docstring)

    suites: dict[str, list[Result]] = {}
    for result in results:
        suites.setdefault(result.file if result.cluster is None else result.cluster, []).append(result)
    root = ElementTree.Element("testsuites", name=TOOL)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite_name, members in suites.items():
        failures = sum(1 for r in members if r.outcome in (REFUSED, MISSING))
        skipped = sum(1 for r in members if r.outcome == UNRESOLVED)
        errors = sum(1 for r in members if r.outcome not in (ADMITTED, REFUSED, MISSING, UNRESOLVED))
        suite = ElementTree.SubElement(
            root,
            "testsuite",
            name=_xml(suite_name),
            tests=str(len(members)),
            failures=str(failures),
            errors=str(errors),
            skipped=str(skipped),
            time="0",
        )
        totals["tests"] += len(members)
        totals["failures"] += failures
        totals["errors"] += errors
        totals["skipped"] += skipped
        for result in members:
            case = ElementTree.SubElement(
                suite,
                "testcase",
                name=_xml(_case_name(result)),
                classname=_xml(result.file),
                file=_xml(result.file),
                time="0",
            )
            line = next((c["line"] for c in result.causes if c.get("line")), result.best_line())
            if line is not None:
                case.set("line", str(line))
            if result.outcome == ADMITTED:
                if result.warnings:
                    out = ElementTree.SubElement(case, "system-out")
                    out.text = _xml("\n".join(f"warning: {w}" for w in result.warnings))
                continue
            tag = {REFUSED: "failure", MISSING: "failure", UNRESOLVED: "skipped"}.get(result.outcome, "error")
            problem = ElementTree.SubElement(
                case,
                tag,
                message=_xml(result.message()),
                type=_xml(_status_reason(result)),
            )
            problem.text = _xml(_failure_text(result))
    for key, value in totals.items():
        root.set(key, str(value))
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


# --- SARIF 2.1.0 ------------------------------------------------------------------------------------------


def artifact_uri(file: str) -> str:
    """A file as SARIF's ``artifactLocation.uri``: a relative reference for a relative path (resolved
    against the repository root by GitHub), a ``file:`` URI for an absolute one."""
    if Path(file).is_absolute():
        return Path(file).as_uri()
    return quote(posixpath.normpath(file.replace("\\", "/")))


def _location(finding: Finding) -> list[dict[str, Any]]:
    if finding.file == STDIN_SOURCE:
        return []  # no file to point at
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(finding.file)}}
    if finding.line is not None:
        physical["region"] = {"startLine": finding.line}
    location: dict[str, Any] = {"physicalLocation": physical}
    if finding.field:
        location["logicalLocations"] = [{"fullyQualifiedName": finding.field, "kind": "member"}]
    return [location]


def sarif(results: Sequence[Result], version: str) -> str:
    found = list(findings(results))
    rules: dict[str, int] = {}
    for finding in found:
        rules.setdefault(finding.rule, len(rules))
    sarif_results = []
    for finding in found:
        entry: dict[str, Any] = {
            "ruleId": finding.rule,
            "ruleIndex": rules[finding.rule],
            "level": finding.level,
            "message": {"text": finding.message},
            "locations": _location(finding),
        }
        if finding.result.cluster is not None:
            entry["properties"] = {"cluster": finding.result.cluster}
        sarif_results.append(entry)
    driver: dict[str, Any] = {"name": TOOL, "version": version}
    uri = information_uri()
    if uri:
        driver["informationUri"] = uri
    driver |= {
        "rules": [
            {
                "id": rule,
                "name": rule,
                "shortDescription": {"text": _rule_text(rule)},
                "defaultConfiguration": {"level": "warning" if rule == WARNING_RULE else "error"},
            }
            for rule in rules
        ],
    }
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": sarif_results}],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def information_uri() -> str:
    """This tool's documentation, from the installed distribution's ``Project-URL`` (pyproject's
    ``[project.urls]``); "" when it declares none (SARIF's ``informationUri`` is optional). Never
    KubeVirt's: a reader of the report follows it to learn what the tool is and how to run it."""
    from importlib.metadata import PackageNotFoundError, metadata

    from apiserver.version import PACKAGE

    try:
        meta = metadata(PACKAGE)
    except PackageNotFoundError:
        return ""
    urls: dict[str, str] = {}
    for entry in meta.get_all("Project-URL") or ():
        label, _, url = entry.partition(",")
        urls.setdefault(label.strip().lower(), url.strip())
    return next((urls[label] for label in _INFORMATION_LABELS if urls.get(label)), "")


def _rule_text(rule: str) -> str:
    if rule == WARNING_RULE:
        return "KubeVirt would admit the VM with a warning"
    if rule.startswith("FieldValue"):
        return f"KubeVirt would refuse the VM: {rule}"
    return f"The input cannot be judged as given or KubeVirt would refuse it: {rule}"


# --- GitLab Code Quality ----------------------------------------------------------------------------------


def _severity(finding: Finding) -> str:
    if finding.level == "warning":
        return "minor"
    return "major" if finding.result.outcome in (REFUSED, MISSING) else "critical"


def codequality(results: Sequence[Result]) -> str:
    issues = []
    seen: dict[str, int] = {}
    for finding in findings(results):
        result = finding.result
        parts = [finding.file, str(result.document), str(result.item), finding.rule, finding.field or ""]
        if result.cluster is not None:
            parts.append(result.cluster)
        key = "\0".join([*parts, finding.message])
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        count = seen.get(digest, 0)  # the same finding twice stays two issues
        seen[digest] = count + 1
        if count:
            digest = hashlib.sha256(f"{digest}\0{count}".encode()).hexdigest()
        issues.append(
            {
                "description": finding.message,
                "check_name": finding.rule,
                "fingerprint": digest,
                "severity": _severity(finding),
                "location": {"path": finding.file, "lines": {"begin": finding.line or 1}},
            }
        )
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
