"""How ``kubevirt-expand expand`` writes its results: stdout holds only what ``-o`` asks for, stderr the
verdicts a person reads (each failure as one line and its Status as one line of JSON, warnings, and the
summary line last).

- ``-o yaml``: the admitted VMs, one document each, written as they are rendered.
- ``-o json``: as ``kubectl get`` prints: the VM itself when the inputs hold exactly one VM document
  (nothing when it fails), otherwise a ``List`` of the admitted VMs (empty when none is), so that
  ``... -o json | jq .spec`` keeps working for one VM.
- ``-o jsonl``: one :class:`~apiserver.cli.report.Result` per line, for every VM and input problem, the
  same members whatever the count (see :mod:`apiserver.cli.report`).
- ``-o junit``, ``-o sarif``, ``-o codequality``: the same results as one report for a CI system, written at
  the end (see :mod:`apiserver.cli.ciformats`); no VM is printed. ``--report FORMAT=FILE`` (repeatable)
  writes such a report (or ``jsonl``) to a file beside what ``-o`` prints, so one run feeds several.

``--check`` prints no VM (a jsonl line's ``object`` is null) and names each admitted VM on stderr.
``--quiet`` keeps stderr to the failures: each ``refused:``/``error:`` line, and its Status as JSON only
when no report holds it already (``-o`` or ``--report`` of ``jsonl`` or a CI format); no ``admitted:``
line, warning, ``catalog:``, ``skipped:`` or ``note:`` line, progress or summary. A run where every VM is
admitted says nothing on stderr.

When stderr is a terminal and the run takes more than a second, a progress line (``judged 1200/5000
VMs``) is kept at the bottom of it, redrawn at most ten times a second and erased before anything else
is written there; logs and pipes never see it.
"""

from __future__ import annotations

import copy
import io
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

import yaml

from apiserver.cli import ciformats
from apiserver.cli.report import ADMITTED, MISSING, REFUSED, UNRESOLVED, Result, Tally
from apiserver.documents.reader import KubeDumper, reads_back_as_text

YAML, JSON, JSONL = "yaml", "json", "jsonl"
FORMATS = (YAML, JSON, JSONL, *ciformats.REPORT_FORMATS)
# What stdout holds when it is a report (every verdict with its Status): no VM is printed.
REPORTS = (JSONL, *ciformats.REPORT_FORMATS)

# What a line must not hold as is (names and fields come from the input): control characters could
# forge lines or send terminal escape sequences, and U+0085/U+2028/U+2029 end a line for some readers.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` with its control characters written as ``\\xNN`` / ``\\uNNNN``."""
    if text.isprintable():
        return text
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if m.group() < "\u0100" else f"\\u{ord(m.group()):04x}", text
    )


def json_line(value: Any) -> str:
    """``value`` as one line of JSON that no line reader splits (the escapes are JSON's own)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)  # escapes C0 itself
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _Dumper(KubeDumper):
    """Block style, members in the renderer's order, multi-line text (cloud-init) as literal blocks,
    strings kubectl would read as something else quoted."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None if reads_back_as_text(value) else "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)

try:  # libyaml's emitter under the same representers: the same bytes for what _c_writes_alike admits

    class _CDumper(yaml.CSafeDumper):
        pass

    _CDumper.add_representer(str, _represent_str)  # type: ignore[arg-type]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _CDumper = None  # type: ignore[assignment, misc]

# Where libyaml's emitter and PyYAML's part ways (found by tests/cli/test_yaml_output.py): characters
# outside printable ASCII (escapes, the astral planes, U+0085 and U+2028 breaks), empty keys and long keys
# (written as ``? key`` by one and not the other: one counts characters, the other bytes), and a block
# scalar at the document's end (libyaml closes it with ``...``). Such a VM is written by PyYAML's emitter.
_MAX_C_KEY = 100


def _c_writes_alike(value: Any) -> bool:
    """Whether libyaml writes ``value`` as PyYAML does, and :func:`_node` represents it as PyYAML's
    representer does: JSON values only, no dict or list twice (PyYAML would write an anchor)."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if id(item) in seen:
                return False
            seen.add(id(item))
        elif not (kind is str or kind is int or kind is float or kind is bool or item is None):
            return False
        if kind is dict:
            for key, member in item.items():
                if not (
                    type(key) is str and 0 < len(key) <= _MAX_C_KEY and key.isascii() and key.isprintable()
                ):
                    return False
                stack.append(member)
        elif type(item) is list:
            stack.extend(item)
        elif type(item) is str and not (
            item.isascii() and (item.isprintable() or item.replace("\n", "").isprintable())
        ):
            return False
    return True


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_SCALARS = yaml.representer.SafeRepresenter()  # for ints, floats, booleans and null: PyYAML's own


def _node(value: Any) -> yaml.Node:
    """The node PyYAML's representer makes of a JSON value (block style, no anchors: see
    :func:`_c_writes_alike`), without its per-value dispatch."""
    kind = type(value)
    if kind is str:
        style = "|" if "\n" in value else None if reads_back_as_text(value) else "'"
        return yaml.ScalarNode(_STR, value, style=style)
    if kind is dict:
        pairs = [(_node(k), _node(v)) for k, v in value.items()]
        return yaml.MappingNode(_MAP, pairs, flow_style=False)
    if kind is list:
        return yaml.SequenceNode(_SEQ, [_node(v) for v in value], flow_style=False)
    node: yaml.Node = _SCALARS.represent_data(value)
    return node


def _c_dump(obj: Mapping[str, Any]) -> str:
    stream = io.StringIO()
    dumper = _CDumper(stream, default_flow_style=False, allow_unicode=True, width=1 << 16, sort_keys=False)
    try:
        dumper.open()
        dumper.serialize(_node(obj))
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()


def _dump(obj: Mapping[str, Any], dumper: Any) -> str:
    text: str = yaml.dump(
        obj, Dumper=dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16
    )
    return text


def to_yaml(obj: Mapping[str, Any]) -> str:
    """The VM as kubectl would print it; libyaml's emitter where it writes the same bytes (5x faster)."""
    if _CDumper is not None and _c_writes_alike(obj):
        text = _c_dump(obj)
        if not text.endswith("...\n"):
            return text
    return _dump(obj, _Dumper)


def to_yaml_pure(obj: Mapping[str, Any]) -> str:
    """PyYAML's own emitter, always: what :func:`to_yaml` must equal."""
    return _dump(obj, _Dumper)


class Writer:
    """Writes each result as it comes, and what needs them all (a ``List``, the summary) at the end."""

    def __init__(
        self,
        output: str,
        *,
        check: bool,
        vms: int,
        stdout: TextIO,
        stderr: TextIO,
        progress: bool = False,
        quiet: bool = False,
        version: str = "",
        reports: Sequence[tuple[str, TextIO]] = (),
    ) -> None:
        self.output = output
        self.check = check
        self.quiet = quiet
        self.version = version
        self.single = vms == 1
        self.stdout = stdout
        self.stderr = stderr
        self._vms: list[dict[str, Any]] = []
        self._results: list[Result] = []  # for a CI report, written at the end
        self.reports = list(reports)
        self._collect = output in ciformats.REPORT_FORMATS or any(f != JSONL for f, _ in self.reports)
        self._reported = output in REPORTS or bool(self.reports)  # the Statuses are in a report
        self._progress = _Progress(stderr, vms) if progress and not quiet else None

    def note(self, line: str) -> None:
        self._erase_progress()
        print(printable(line), file=self.stderr)

    def remark(self, line: str) -> None:
        """A line about the run, not a finding (``catalog:``, ``skipped:``, ``note:``): not under
        ``--quiet``, whose stderr is the findings alone."""
        if not self.quiet:
            self.note(line)

    def _erase_progress(self) -> None:
        """Before any other line on stderr."""
        if self._progress is not None:
            self._progress.erase()

    def _out(self, text: str) -> None:
        if self._progress is not None and self.stdout.isatty():  # the same terminal, likely
            self._progress.erase()
        self.stdout.write(text)

    def warning(self, text: str) -> None:
        if not self.quiet:
            self.note(f"Warning: {text}")

    def result(self, result: Result) -> None:
        where = result.where()
        if result.cluster is not None:  # the same file may be judged in several clusters
            where = f"[{result.cluster}] {where}"
        label = result.label()
        prefix = f"{where}: {label}" if label else where
        for warning in result.warnings:
            self.warning(f"{prefix}: {warning}")
        if result.outcome == ADMITTED:
            if self.check and not self.quiet:
                self.note(f"admitted: {prefix}")
            elif result.object is not None:
                self._vm(result.object)
        else:
            status = result.status or {}
            message = (result.headline or str(status.get("message", ""))).replace("\n", " ")
            verdict = {REFUSED: "refused", UNRESOLVED: "unresolved", MISSING: "missing"}.get(
                result.outcome, "error"
            )
            named = bool(label) and message.startswith(label + " ")  # ours name the object first
            self.note(f"{verdict}: {where if named else prefix}: {message}")
            if not (self.quiet and self._reported):
                self.stderr.write(json_line(status) + "\n")
        if self.output == JSONL:
            self._out(json_line(result.to_json()) + "\n")
        for fmt, stream in self.reports:
            if fmt == JSONL:
                stream.write(json_line(result.to_json()) + "\n")
        if self._collect:
            kept = copy.copy(result)
            kept.object = None  # a CI report never holds the VM: keep no more than it needs
            self._results.append(kept)
        if self._progress is not None and result.is_vm:
            self._progress.advance()

    def _vm(self, vm: dict[str, Any]) -> None:
        if self.output == YAML:
            text = to_yaml(vm)
            self._out(text if not self._vms else "---\n" + text)
            self._vms.append({})  # only counted: the document is written already
        elif self.output == JSON:
            self._vms.append(vm)

    def finish(self, tally: Tally) -> None:
        if self.output == JSON and not self.check:
            if not self.single:
                self._write_json({"apiVersion": "v1", "kind": "List", "items": self._vms})
            elif self._vms:
                self._write_json(self._vms[0])
        elif self.output in ciformats.REPORT_FORMATS:
            self._out(ciformats.write(self.output, self._results, self.version))
        for fmt, stream in self.reports:
            if fmt != JSONL:
                stream.write(ciformats.write(fmt, self._results, self.version))
            stream.flush()
        self.stdout.flush()
        if not self.quiet:
            self.note(tally.summary())

    def _write_json(self, body: Mapping[str, Any]) -> None:
        self._out(json.dumps(body, indent=4, ensure_ascii=False) + "\n")


class _Progress:
    """The terminal's progress line (see the module docstring)."""

    DELAY = 1.0  # seconds before the first drawing: short runs never show it
    INTERVAL = 0.1

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = total
        self.done = 0
        self.shown = False
        self.next_draw = time.monotonic() + self.DELAY

    def advance(self) -> None:
        self.done += 1
        now = time.monotonic()
        if now >= self.next_draw and self.done < self.total:
            self.next_draw = now + self.INTERVAL
            self.stream.write(f"\r\x1b[Kjudged {self.done}/{self.total} VMs")
            self.stream.flush()
            self.shown = True

    def erase(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.shown = False


def change_lines(changes: Iterable[Mapping[str, Any]]) -> list[str]:
    """``  /spec/path: old -> new`` per rendered change (a preview's ``changes``), ``(none)`` for a side
    without the member."""
    lines = []
    for change in changes:
        old = json.dumps(change["old"]) if "old" in change else "(none)"
        new = json.dumps(change["new"]) if "new" in change else "(none)"
        lines.append(printable(f"  {change['path']}: {old} -> {new}"))
    return lines
