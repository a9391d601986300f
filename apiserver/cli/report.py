"""The verdicts of one ``kubevirt-expand expand`` run: one :class:`Result` per VM or input problem, the
tally behind the summary line, and the exit code.

A run's report has the same shape whatever the number of VMs: a result per VM document and per input
problem, in input order, every result with the same members (``None`` where one does not apply), so a
CI job reads 0, 1 or 5,000 VMs the same way.

Outcomes:

- ``Admitted``: the VM was rendered (and, with ``--validate``, passed the admission checks).
- ``Refused``: KubeVirt would refuse it; ``status`` is the Status the server would send (4xx).
- ``Unresolved``: it cannot be rendered from what was given: an instancetype, preference or
  ControllerRevision it names is neither among the inputs nor in a ``--catalog``. KubeVirt's webhook
  admits such a VM (it ignores what it cannot find); ``status`` is the not-found Status a server without
  that object would send.
- ``Missing`` (``--catalog-complete`` only): it names an instancetype or preference that neither the
  inputs nor the catalog, taken as all the cluster holds, have: a typo or an object never created, so
  KubeVirt would admit a VM that never starts. ``status`` names what is missing first (with the
  closest names), then anything else that refuses the VM.
- ``Error``: no verdict could be reached: a file that cannot be read, an object defined twice, a VM that
  uses such an object, or a failure of ours (5xx). ``status`` says which.

Exit codes: 2 when any result is an ``Error`` or no VM was found (the input, not a VM, needs fixing), else
4 when any VM is ``Missing`` (a name to fix, ranked above refusals since it is often what makes the
webhook refuse), else 1 when any VM is refused, else 3 when any VM is unresolved, else 0. Usage errors (a bad flag) exit 2
before any result. Objects passed over (not KubeVirt's, excluded) are counted, never results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from apiserver.documents.locate import Locator
from apiserver.documents.manifests import Manifest

ADMITTED: Final = "Admitted"
REFUSED: Final = "Refused"
UNRESOLVED: Final = "Unresolved"
MISSING: Final = "Missing"
ERROR: Final = "Error"

EXIT_ADMITTED: Final = 0
EXIT_REFUSED: Final = 1
EXIT_UNUSABLE: Final = 2
EXIT_UNRESOLVED: Final = 3
EXIT_MISSING: Final = 4
# From the least to the worst: the exit code of runs taken together (clusters) is the worst of theirs.
EXIT_RANK: Final = (EXIT_ADMITTED, EXIT_UNRESOLVED, EXIT_REFUSED, EXIT_MISSING, EXIT_UNUSABLE)

VM_KIND: Final = "VirtualMachine"


@dataclass(slots=True)
class Result:
    """One line of the report: where it came from, what it is, and the verdict.

    ``document`` is the 1-based YAML/JSON document of ``file`` (``None`` when the file as a whole could
    not be read), ``item`` the 0-based index in the ``items`` of a ``List`` document, ``line`` the line
    of a syntax error or a key given twice. ``causes`` are the Status's causes, each with the ``line`` of
    the field it names (``findings`` in place of them when set), and ``start`` the object's first line
    (see :meth:`locate`; ``start`` is not in the jsonl line). ``cluster`` is the configuration file's
    cluster the result belongs to (``None`` without one). ``causes`` set before :meth:`locate` are the
    ones it places instead of the Status's (:func:`apiserver.cli.webhookfields.placed_causes`: the
    webhook's field-less causes given fields). ``object`` is the expanded VM (``Admitted``, unless the
    run is ``--check``).
    """

    file: str
    document: int | None
    outcome: str
    item: int | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    line: int | None = None
    status: dict[str, Any] | None = None
    causes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    object: dict[str, Any] | None = None
    start: int | None = None
    cluster: str | None = None
    # What the reports say in place of the Status's message and causes, when the Status (KubeVirt's own
    # answer, kept as it is) does not name first what to fix: a missing instancetype or preference, with
    # the closest names (apiserver.cli.expand). Not jsonl members: ``causes`` carries ``findings``.
    headline: str | None = None
    findings: list[dict[str, Any]] | None = None

    @classmethod
    def of(cls, manifest: Manifest, outcome: str, **members: Any) -> Result:
        """A result about ``manifest``, placed where it was found."""
        return cls(manifest.source, manifest.document, outcome, item=manifest.item, **members)

    @property
    def is_vm(self) -> bool:
        return self.kind == VM_KIND

    def where(self) -> str:
        """``FILE: document N, items[I], line L`` as far as known."""
        parts = [f"document {self.document}"] if self.document is not None else []
        if self.item is not None:
            parts.append(f"items[{self.item}]")
        if self.line is not None:
            parts.append(f"line {self.line}")
        return f"{self.file}: {', '.join(parts)}" if parts else self.file

    def label(self) -> str:
        """``namespace/name`` for a VM, ``Kind namespace/name`` for another object, ``""`` for a file."""
        if self.kind is None:
            return ""
        name = self.name or "(unnamed)"
        qualified = f"{self.namespace}/{name}" if self.namespace else name
        return qualified if self.is_vm else f"{self.kind} {qualified}"

    def locate(self, locator: Locator | None) -> None:
        """Give each cause (of the Status, unless ``causes`` holds some already) the line of its field
        in the input (``None`` when it names none, or the text is gone: ``locator`` is ``None``), and
        the result its object's first line."""
        details = (self.status or {}).get("details")
        causes = self.causes or (details.get("causes") if isinstance(details, dict) else None)
        if self.findings is not None:
            causes = self.findings
        placed: list[dict[str, Any]] = []
        for cause in causes if isinstance(causes, list) else []:
            where = cause.get("field")
            line = None
            if locator is not None and self.document is not None and isinstance(where, str) and where:
                line = locator.line(self.document, self.item, where)
            placed.append({**cause, "line": line})
        self.causes = placed
        if locator is not None and self.document is not None:
            self.start = locator.start(self.document, self.item)

    def message(self) -> str:
        """The one line that says what is wrong: the headline, else the Status's message."""
        if self.headline is not None:
            return self.headline
        return str((self.status or {}).get("message", self.outcome))

    def best_line(self) -> int | None:
        """Where a report points when it has nothing closer: the syntax error, else the object."""
        return self.line if self.line is not None else self.start

    def to_json(self) -> dict[str, Any]:
        """The ``-o jsonl`` line: every member always present, in this order."""
        return {
            "cluster": self.cluster,
            "file": self.file,
            "document": self.document,
            "item": self.item,
            "line": self.line,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "outcome": self.outcome,
            "status": self.status,
            "causes": self.causes,
            "warnings": self.warnings,
            "object": self.object,
        }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(slots=True)
class Tally:
    """What the summary line says and the exit code follows from."""

    files: int = 0
    vms: int = 0
    admitted: int = 0
    refused: int = 0
    errors: int = 0
    unresolved: int = 0
    missing: int = 0
    skipped: int = 0  # objects, documents and files passed over (see apiserver.cli.inputs.Skipped)
    clusters: int = 0  # the configuration file's clusters judged, when it names some

    def merge(self, other: Tally) -> None:
        """Count ``other``'s run (a cluster's) in this one."""
        for name in ("files", "vms", "admitted", "refused", "errors", "unresolved", "missing", "skipped"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def add(self, result: Result) -> None:
        if result.is_vm:
            self.vms += 1
        if result.outcome == ADMITTED:
            self.admitted += 1
        elif result.outcome == REFUSED:
            self.refused += 1
        elif result.outcome == UNRESOLVED:
            self.unresolved += 1
        elif result.outcome == MISSING:
            self.missing += 1
        else:
            self.errors += 1

    def summary(self) -> str:
        """``summary: 3 VMs, 1 admitted, 1 refused, 2 errors, 4 files`` (errors: every ``Error`` result,
        VM or not); ``N unresolved`` after the refused and ``N skipped`` at the end when there are any."""
        unresolved = f", {self.unresolved} unresolved" if self.unresolved else ""
        unresolved += f", {self.missing} missing" if self.missing else ""
        skipped = f", {self.skipped} skipped" if self.skipped else ""
        clusters = f", {_count(self.clusters, 'cluster')}" if self.clusters else ""
        return (
            f"summary: {_count(self.vms, 'VM')}, {self.admitted} admitted, {self.refused} refused{unresolved}, "
            f"{_count(self.errors, 'error')}, {_count(self.files, 'file')}{skipped}{clusters}"
        )

    def exit_code(self) -> int:
        if self.errors or not self.vms:
            return EXIT_UNUSABLE
        if self.missing:
            return EXIT_MISSING
        if self.refused:
            return EXIT_REFUSED
        return EXIT_UNRESOLVED if self.unresolved else EXIT_ADMITTED
