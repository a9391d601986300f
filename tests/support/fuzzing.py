"""Shared pieces of the property-based tests: profiles, the seed, and hostile mutations of inputs.

``KUBEVIRT_EXPAND_FUZZ`` picks the profile: ``ci`` (the default, bounded so the fuzz targets add well
under a minute) or ``long`` (ten times the examples). Hypothesis draws a seed per target and run; the
terminal summary prints them (tests/conftest.py), and ``KUBEVIRT_EXPAND_FUZZ_SEED=N`` runs every
target with seed N to repeat a run (hypothesis' example database is not used then). Where ``CI`` is
set, hypothesis derandomizes by itself (the same examples every run, so a CI verdict does not depend on
luck); the summary then says "derandomized". Failures
hypothesis finds are kept in ``tests/fuzz_regressions/`` (its example database, committed) and
replayed first on every run; each bug fixed also gets an explicit ``@example`` beside its target.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from functools import cache, wraps
from pathlib import Path
from typing import Any, Final, TypeVar

import orjson
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as _seed
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.vendor import pretty

from tests.support import shared
from tests.support.conformance import CASES_DIR, Case, case_files, load

REPO: Final = Path(__file__).resolve().parents[2]
REGRESSIONS: Final = REPO / "tests" / "fuzz_regressions"

PROFILE: Final = os.environ.get("KUBEVIRT_EXPAND_FUZZ", "ci").strip().lower() or "ci"
_SCALE: Final = {"ci": 1, "long": 10}
if PROFILE not in _SCALE:
    raise RuntimeError(f"KUBEVIRT_EXPAND_FUZZ must be one of {', '.join(_SCALE)}, not {PROFILE!r}")

_FORCED = os.environ.get("KUBEVIRT_EXPAND_FUZZ_SEED", "").strip()
FORCED_SEED: Final = int(_FORCED) if _FORCED else None

# Each example is bounded in CPU time (the process's, so a server thread's work counts), not by hypothesis'
# wall-clock deadline: a quadratic blow-up still fails, a loaded machine does not (examples use well under
# 1 s, yet one went past a 10 s deadline in a full run at load 16 on 2 cores, and hypothesis kept it in
# tests/fuzz_regressions/ as a failure to replay).
CPU_SECONDS: Final = 10.0

_COMMON = settings(
    deadline=None,
    database=DirectoryBasedExampleDatabase(REGRESSIONS),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    print_blob=True,
    # No shrinking budget worth waiting for in CI; the failing example is printed as found.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
)
settings.register_profile("ci", _COMMON)
settings.register_profile("long", _COMMON)


def _pretty_int(obj: int, printer: Any, cycle: bool) -> None:
    """Print integers past Python's conversion limit as ``10**N - 1``-style text (repr fails)."""
    try:
        printer.text(repr(obj))
    except ValueError:
        printer.text(f"({'-' if obj < 0 else ''}2**{abs(obj).bit_length() - 1} + ...)")


# Falsifying examples with such integers must still be reported.
pretty._type_pprinters[int] = _pretty_int

# --- conformance cases, balanced over their areas ---------------------------------------------------

needs_cases: Final = shared.needs_shared(CASES_DIR)
"""The mark of a target that draws golden cases: it skips (or fails) for the shared reason without them."""

_BY_AREA: dict[str, list[Path]] = defaultdict(list)
for _path in case_files():
    _BY_AREA[_path.stem.rsplit("-", 1)[0]].append(_path)


def _no_cases(_: object) -> Path:
    raise LookupError(f"no golden cases in {CASES_DIR}: a test drawing them needs @needs_cases")


case_paths: Final = (
    st.sampled_from(sorted(_BY_AREA)).flatmap(lambda area: st.sampled_from(_BY_AREA[area]))
    if _BY_AREA
    else st.just(None).map(_no_cases)
)
"""A golden case's file: an area first (the 1,852 common-instancetypes cases are one of twelve)."""


def first_case(area: str) -> Path:
    if area not in _BY_AREA:
        raise LookupError(f"no {area}-* golden case in {CASES_DIR}: a test reading them needs @needs_cases")
    return _BY_AREA[area][0]


@cache
def case(path: Path) -> Case:
    """A golden case, read once per process (never changed: mutations work on copies)."""
    return load(path)


# --- what a failure must look like -----------------------------------------------------------------

# Python's own error texts: one in a Status means an exception was dressed up, not handled.
PYTHON_INTERNALS: Final = re.compile(
    r"Traceback|object has no attribute|NoneType|unhashable type|not subscriptable|not iterable"
    r"|invalid literal for|Exceeds the limit \(\d+ digits\)|maximum recursion depth|takes \d+ positional"
    r"|unsupported operand|can't multiply|object of type|must be str, not|list indices must"
)


def check_status(status: dict[str, Any], input_size: int) -> None:
    """A failure is a Kubernetes Status a client can act on, not much bigger than what was sent."""
    assert status["kind"] == "Status" and status["apiVersion"] == "v1" and status["status"] == "Failure"
    assert status["code"] in (400, 422), status
    assert status["reason"] == {400: "BadRequest", 422: "Invalid"}[status["code"]]
    message = status["message"]
    assert isinstance(message, str) and message
    assert not PYTHON_INTERNALS.search(message), message
    for cause in status.get("details", {}).get("causes", []):
        assert set(cause) <= {"reason", "message", "field"}, cause
        assert all(isinstance(v, str) for v in cause.values()), cause
        assert not PYTHON_INTERNALS.search(cause.get("message", "")), cause
    encoded = orjson.dumps(status)
    assert len(encoded) <= 4 * input_size + 65_536, f"{len(encoded)} bytes for an input of {input_size}"


RAN: dict[str, int] = {}
"""Examples run per target in this process (printed in the terminal summary)."""

F = TypeVar("F", bound=Callable[..., Any])


def fuzz(target: str, ci_examples: int, *, keep_failures: bool = True) -> Callable[[F], F]:
    """Hypothesis settings and seed for one target: ``ci_examples`` in CI, ten times that when long;
    failures saved to the example database unless ``keep_failures`` is false."""

    def wrap(test: F) -> F:
        configured = settings(settings.get_profile(PROFILE), max_examples=ci_examples * _SCALE[PROFILE])
        if not keep_failures:
            configured = settings(configured, database=None)
        wrapped: F = configured(test)
        wrapped.hypothesis.inner_test = _cpu_bounded(wrapped.hypothesis.inner_test)  # type: ignore[attr-defined]
        if FORCED_SEED is not None:  # hypothesis then leaves its example database alone
            wrapped = _seed(FORCED_SEED)(wrapped)
        _TESTS[target] = wrapped
        return wrapped

    RAN.setdefault(target, 0)
    return wrap


_TESTS: dict[str, Any] = {}


def _cpu_bounded(example: Callable[..., Any]) -> Callable[..., Any]:
    """Run one example and fail it when it used more than ``CPU_SECONDS`` of CPU."""

    @wraps(example)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        result = example(*args, **kwargs)
        used = time.process_time() - start
        assert used <= CPU_SECONDS, f"one example used {used:.1f} s of CPU (the bound is {CPU_SECONDS:g} s)"
        return result

    return bounded


def seed_of(target: str) -> int | str | None:
    """The seed hypothesis used for ``target`` in this run (None before it ran), or "derandomized"
    where hypothesis' CI profile is in force (it loads it by itself when ``CI`` and the like are set):
    then every run tries the same examples, chosen from the test's own code."""
    if FORCED_SEED is not None:
        return FORCED_SEED
    test = _TESTS.get(target)
    configured = getattr(test, "_hypothesis_internal_use_settings", None)
    if configured is not None and configured.derandomize:
        return "derandomized"
    return getattr(test, "_hypothesis_internal_use_generated_seed", None)


@contextlib.contextmanager
def unlimited_int_text() -> Iterator[None]:
    """Let the harness write integers of any length as text (Python refuses past 4,300 digits)."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)


def count(target: str) -> None:
    RAN[target] = RAN.get(target, 0) + 1


# --- hostile values ---------------------------------------------------------------------------------

ODD_STRINGS: Final = [
    "",
    " ",
    "0",
    "-1",
    "1Gi",
    "-1Gi",
    "0.5",
    "1e3",
    "1e309",
    "1E-400",
    "0x1F",
    "0o17",
    "1.5Mi",
    "1Ki1",
    "+.5e-3M",
    "Always",
    "Halted",
    "spread",
    "preferSockets",
    "SocketsCoresThreads",
    "any",
    "virtualmachineinstancetype",
    "VirtualMachineClusterInstancetype",
    "virtualmachinepreferences",
    "VirtualMachineClusterPreference",
    "ControllerRevision",
    "amd64",
    "arm64",
    "s390x",
    "q35",
    "true",
    "false",
    "null",
    "~",
    "a/b",
    "../..",
    "%s%n",
    "{}",
    "[]",
    "\x00",
    "\u202e",
    "😀",
    "é",
    "2026-01-01T00:00:00Z",
    "52:54:00:12:34:56",
    "instancetype.kubevirt.io/object-name",
    "kubevirt.io/v1",
    "instancetype.kubevirt.io/v1beta1",
    "instancetype.kubevirt.io/v1alpha1",
    "flavor.kubevirt.io/v1alpha1",
    "e30=",
]

ODD_NUMBERS: Final = [
    0,
    -1,
    1,
    2,
    3,
    255,
    2**31,
    2**32,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63) - 1,
    0.5,
    -0.0,
    1e308,
    -1e308,
    5e-324,
    float("nan"),
    float("inf"),
    float("-inf"),
]

scalars: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(ODD_NUMBERS),
    st.sampled_from([1023, 1024]).map(lambda exponent: 2**exponent),  # a float's edge, as an integer
    # Beyond Python's 4,300-digit limit of int <-> str conversions (built lazily: not even repr works).
    st.sampled_from([4_300, 4_301, 5_000]).map(lambda digits: 10**digits - 1),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(ODD_STRINGS),
    # Long texts, built lazily so that hypothesis' reports stay readable.
    st.sampled_from([5_000, 70_000]).map(lambda n: "1" + "0" * n),
    st.sampled_from(["Gi", "m", "e3", "E-9"]).map(lambda suffix: "1" + "0" * 4_400 + suffix),
    st.just(4_400).map(lambda n: "0." + "0" * n + "1"),
    st.just(300).map(lambda n: "9" * n + "e" + "9" * 30),
    st.just(70_000).map(lambda n: "a" * n),
)


def _deep(depth: int, leaf: Any, as_list: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value] if as_list else {"a": value}
    return value


deep_values: Final = st.builds(
    _deep, st.sampled_from([30, 99, 100, 101, 256, 1_000, 20_000]), scalars, st.booleans()
)

json_values: Final = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

# What only a Python caller (never bytes) can hand over: the API must refuse these as ExpandError.
non_json: Final = st.one_of(
    st.tuples(scalars),
    st.frozensets(st.integers(), max_size=2),
    st.binary(max_size=4),
    st.builds(object),
    st.builds(lambda k, v: {k: v}, st.one_of(st.integers(), st.none(), st.booleans(), st.tuples()), scalars),
)

values: Final = st.one_of(scalars, json_values, deep_values)
shallow_values: Final = st.one_of(scalars, json_values)
"""Values a serializer can still write (json.dumps stops at about 1,000 levels)."""


# --- structural mutations ---------------------------------------------------------------------------

Path_ = tuple[Any, ...]


def walk(value: Any, most_depth: int = 60) -> list[tuple[Path_, Any]]:
    """Nodes of a JSON tree with their paths, root first, down to ``most_depth`` (iterative: a
    mutation may have nested something 20,000 deep)."""
    found: list[tuple[Path_, Any]] = []
    stack: list[tuple[Path_, Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        found.append((path, node))
        if len(path) >= most_depth:
            continue
        if isinstance(node, dict):
            stack.extend(((*path, k), v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node))))
    return found


def clone(value: Any) -> Any:
    """A copy of the dicts and lists of a tree, however deep (leaves shared: they are immutable)."""
    if not isinstance(value, dict | list):
        return value
    top: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, top)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            copied = {} if isinstance(item, dict) else [] if isinstance(item, list) else item
            if isinstance(target, dict):
                target[key] = copied
            else:
                target.append(copied)
            if copied is not item:
                stack.append((item, copied))
    return top


def same(a: Any, b: Any) -> bool:
    """Whether two trees are equal, however deep (NaN equals NaN: the input was not changed)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y and not (isinstance(x, float) and x != x and y != y):
            return False
    return True


def keys_of(value: Any) -> list[str]:
    """Every mapping key in a tree, sorted: field names worth reusing somewhere else."""
    return sorted({p[-1] for p, _ in walk(value) if p and isinstance(p[-1], str)})


def _parent(root: Any, path: Path_) -> Any:
    node = root
    for step in path[:-1]:
        node = node[step]
    return node


OPERATIONS: Final = (
    "drop",
    "replace",
    "duplicate",
    "graft",
    "add",
    "rename",
    "wrap",
    "empty",
    "edge",
    "edge",
)

# Same-kind neighbours of what a field held: edge integers for integers, edge quantities for
# quantity-like text, so a mutation gets past type checks into the arithmetic.
EDGE_INTEGERS: Final = [0, 1, -1, 2, 3, 7, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53, 2**63 - 1, 2**63, 2**64]
EDGE_QUANTITIES: Final = [
    "0",
    "-1",
    "1",
    "0.5",
    "1m",
    "0.1m",
    "1e3",
    "1E-3",
    "1Ei",
    "8Ei",
    "9223372036854775807",
    "9223372036854775808Ki",
    "1" + "0" * 30 + "Gi",
    "1.5Gi",
    "100Mi",
    "1Pi",
    "0Gi",
    "-2Gi",
    "1.0000000001",
    "  1Gi",
    "1gi",
]
_QUANTITY = re.compile(r"^[+-]?[0-9.]+([eEinumkKMGTP]*[-+]?[0-9]*)$")


@st.composite
def mutated(
    draw: st.DrawFn, original: Any, *, python_values: bool = False, deep: bool = True, most: int = 4
) -> Any:
    """``original`` (deep-copied) after one to ``most`` random edits: members dropped, replaced by odd
    values or by values taken from elsewhere in the tree, duplicated, renamed, added (known field
    names with odd values), wrapped in a list, emptied."""
    root = clone(original)
    known = keys_of(original) or ["spec"]
    for _ in range(draw(st.integers(1, most))):
        nodes = list(walk(root))
        path, node = nodes[draw(st.integers(0, len(nodes) - 1))]
        operation = draw(st.sampled_from(OPERATIONS))
        pool = (values if deep else shallow_values) if not python_values else st.one_of(values, non_json)
        if not path:
            if operation in ("add", "drop") and isinstance(root, dict):
                if operation == "add":
                    root[draw(st.sampled_from(known))] = draw(pool)
                elif root:
                    root.pop(draw(st.sampled_from(sorted(root))))
            continue
        parent, key = _parent(root, path), path[-1]
        if operation == "drop":
            del parent[key]
        elif operation == "replace":
            parent[key] = draw(pool)
        elif operation == "duplicate":
            if isinstance(parent, list):
                parent.insert(key, clone(node))
            else:
                parent[draw(st.sampled_from(known))] = clone(node)
        elif operation == "graft":
            _, other = nodes[draw(st.integers(0, len(nodes) - 1))]
            parent[key] = clone(other)
        elif operation == "add":
            if isinstance(node, dict):
                node[draw(st.sampled_from(known))] = draw(pool)
            elif isinstance(node, list):
                node.append(draw(pool))
            else:
                parent[key] = draw(pool)
        elif operation == "rename":
            if isinstance(parent, dict):
                parent[draw(st.sampled_from([*known, str(key).upper(), str(key) + " "]))] = parent.pop(key)
        elif operation == "wrap":
            parent[key] = [node]
        elif operation == "edge":
            if isinstance(node, int) and not isinstance(node, bool):
                parent[key] = draw(st.sampled_from(EDGE_INTEGERS))
            elif isinstance(node, str) and _QUANTITY.match(node):
                parent[key] = draw(st.sampled_from(EDGE_QUANTITIES))
            elif isinstance(node, str):
                parent[key] = draw(st.sampled_from(ODD_STRINGS))
        elif operation == "empty":
            parent[key] = type(node)() if isinstance(node, dict | list | str) else None
    return root


def size_of(value: Any) -> int:
    """About the size of a tree as JSON text, however deep: 8 per node plus the text of strings."""
    total = 0
    stack = [value]
    while stack:
        node = stack.pop()
        total += 8
        if isinstance(node, dict):
            total += sum(len(str(k)) for k in node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            total += len(node)
    return total


# --- textual mutations of JSON and YAML -------------------------------------------------------------

# Flow-style YAML (and JSON) values that readers get wrong: aliases, tags, odd keys, deep nesting,
# numbers past every limit, control characters. Each fits where a scalar value stood on a line.
YAML_VALUES: Final = [
    "&a [1, 2, 3]",
    "*a",
    "*undefined",
    "&r [*r]",
    "!!binary aGVsbG8=",
    "!!binary '!!!'",
    "!!set {a, b}",
    "!!timestamp 2001-12-14t21:59:43.10-05:00",
    "!!python/object/apply:os.system [echo]",
    "!!python/name:os.system",
    "!!float .nan",
    "!!float .inf",
    "!!int 0x1F",
    "!!int '12a'",
    "!!str 1",
    "!!null ''",
    "!!bool maybe",
    "!!map [a]",
    "!!seq {a: 1}",
    "!<tag:yaml.org,2002:str> x",
    "!custom x",
    "{1: a}",
    "{~: a}",
    "{true: a, 1e3: b, 0x1F: c, .5: d, .inf: e}",
    "{[a, b]: c}",
    "{{a: 1}: c}",
    "{a: 1, a: 2}",
    "{<<: {x: 1}, y: 2}",
    ".nan",
    ".inf",
    "-.inf",
    "1e400",
    "-1e400",
    "18446744073709551616",
    "-9223372036854775809",
    "0b" + "1" * 70,
    "0o" + "7" * 30,
    "52:54:00:12:34:56",
    "190:20:30",
    "2001-12-14",
    "y",
    "NO",
    "on",
    "~",
    "null",
    "''",
    '""',
    '"\\ud800"',
    '"\\x00\\x1b[31m"',
    "'\u202e'",
    "|\n  block",
    ">-\n  folded",
    "[a, b",
    "{a: 1",
    "]",
    "}",
    "'unterminated",
    '"unterminated',
    "@reserved",
    "`reserved",
    "% not a directive",
    "- - - a",
    "? complex",
    "a: b: c",
    "\t1",
]

YAML_LINES: Final = [
    "---",
    "...",
    "--- |",
    "%YAML 1.1",
    "%YAML 1.3",
    "%TAG ! tag:example.com,2000:",
    "&x",
    "<<: *a",
    "? [a]",
    ": b",
    "kind: VirtualMachine",
    "kind: List",
    "items: []",
    "metadata: {name: dup}",
    "spec: null",
    "\ufeffkind: VirtualMachine",
    "\x00",
    "\x1b[2J",
    "\t",
    "# comment",
    "[[[[[[[[[[",
    "{{{{{{{{{{",
]


def _big_text(kind: str, n: int) -> str:
    """Large snippets, built lazily: nesting n deep, an n-digit integer, an alias fan-out."""
    if kind == "list":
        return "[" * n + "]" * n
    if kind == "map":
        return "{a: " * n + "1" + "}" * n
    if kind == "digits":
        return "1" * n
    if kind == "hex":
        return "0x" + "f" * n
    if kind == "float":
        return "1." + "1" * n + "e1"
    # Billion laughs: n levels of ten aliases of the level below.
    levels = ["&l0 [lol]"]
    levels += [f"&l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, n + 1)]
    return "[" + ", ".join(levels) + "]"


big_snippets: Final = st.builds(
    _big_text,
    st.sampled_from(["list", "map", "digits", "hex", "float", "laughs"]),
    st.sampled_from([3, 6, 99, 101, 4_301, 20_000]),
).filter(lambda text: len(text) < 200_000)

yaml_values: Final = st.one_of(st.sampled_from(YAML_VALUES), big_snippets)
TEXT_OPERATIONS: Final = ("value", "line", "delete", "duplicate", "cut", "bytes", "indent")


@st.composite
def text_mutated(draw: st.DrawFn, text: str, *, most: int = 3) -> bytes:
    """``text`` (JSON or YAML) after one to ``most`` edits of its lines: a scalar value replaced by a
    hazardous one (aliases, tags, odd keys, deep nesting, huge numbers), a hazardous line inserted,
    lines deleted or duplicated, the text cut short, raw bytes (invalid UTF-8, NUL) inserted, an
    indentation broken."""
    lines = text.split("\n")
    raw_insert: bytes | None = None
    for _ in range(draw(st.integers(1, most))):
        if not lines:  # an earlier delete took every line: edit an empty one
            lines.append("")
        at = draw(st.integers(0, len(lines) - 1))
        line = lines[at]
        operation = draw(st.sampled_from(TEXT_OPERATIONS))
        indent = line[: len(line) - len(line.lstrip(" "))]
        if operation == "value":
            head, colon, _ = line.partition(": ")
            value = draw(yaml_values)
            lines[at] = f"{head}: {value}" if colon else f"{indent}- {value}"
        elif operation == "line":
            lines.insert(at, indent + draw(st.one_of(st.sampled_from(YAML_LINES), yaml_values)))
        elif operation == "delete":
            del lines[at : at + draw(st.integers(1, 3))]
        elif operation == "duplicate":
            lines.insert(at, line)
        elif operation == "cut":
            lines = lines[: at + 1]
            if lines:
                lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
        elif operation == "bytes":
            raw_insert = draw(
                st.sampled_from([b"\xff\xfe", b"\x00", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf"])
            )
            lines.insert(at, "\x00RAW\x00")
        elif operation == "indent":
            lines[at] = draw(st.sampled_from(["\t", " ", "   "])) + line
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if raw_insert is not None:
        data = data.replace(b"\x00RAW\x00", raw_insert)
    return data
