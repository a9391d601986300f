"""Property: ``kubevirt-expand expand -f FILE`` on any file exits 0, 1 or 2, says why on stderr when it
is not 0, never prints a traceback or an internal error, and prints no more than a small multiple of
what it read.

The files are golden conformance cases written as YAML or JSON, then mutated by hypothesis: the
objects first (tests/support/fuzzing.py ``mutated``), then the text (``text_mutated``: aliases, tags, odd
keys, deep nesting, huge numbers, control bytes, broken syntax). ``main()`` runs in-process.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import yaml
from hypothesis import event, example, given
from hypothesis import strategies as st

from apiserver.cli import main
from apiserver.documents.reader import read_documents
from tests.cli.test_expand_gate import MEMBERS as JSONL_MEMBERS
from tests.support.fuzzing import (
    case,
    case_paths,
    count,
    first_case,
    fuzz,
    mutated,
    needs_cases,
    text_mutated,
    unlimited_int_text,
)

TARGET = "command line: kubevirt-expand expand"


def _write(docs: list[Any], fmt: str) -> str:
    with unlimited_int_text():  # the file may hold a 5,000-digit number; only the reader is tested
        return _dump(docs, fmt)


def _dump(docs: list[Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, indent=2)
    return yaml.safe_dump_all(docs, sort_keys=False)


@st.composite
def runs(draw: st.DrawFn) -> dict[str, Any]:
    """Files for one run (name -> bytes) and the command line's options."""
    golden = case(draw(case_paths))
    docs: list[Any] = [golden.input["vm"], *golden.input["objects"]]
    if draw(st.booleans()):
        docs = draw(mutated(docs, deep=False))
        if not isinstance(docs, list):
            docs = [docs]
    fmt = draw(st.sampled_from(["yaml", "json"]))
    text = _write(docs, fmt)
    data = draw(text_mutated(text)) if draw(st.integers(0, 3)) else text.encode()
    files = {f"manifests.{fmt}": data}
    options: list[str] = []
    kubevirt = golden.input.get("kubevirt")
    if kubevirt is not None:
        files["kubevirt.yaml"] = (
            draw(text_mutated(yaml.safe_dump(kubevirt)))
            if draw(st.booleans())
            else (yaml.safe_dump(kubevirt).encode())
        )
        options += ["--kubevirt", "kubevirt.yaml"]
    options += ["-o", draw(st.sampled_from(["yaml", "json", "jsonl"]))]
    options += draw(st.sampled_from([[], ["--presets"], ["--validate"], ["--presets", "--validate"]]))
    options += ["--field-validation", draw(st.sampled_from(["Strict", "warn", "Ignore"]))]
    namespace = draw(st.sampled_from([None, "default", "other", "Not_A_Namespace", "x" * 300]))
    if namespace is not None:
        options += ["-n", namespace]
    return {"files": files, "options": options, "stdin": draw(st.booleans())}


def run_cli(files: dict[str, bytes], options: list[str], *, stdin: bool = False) -> tuple[int, str, str]:
    """``kubevirt-expand expand -f`` the first file (or ``-f -`` with it on stdin) with ``options``,
    in a scratch folder."""
    out, err = io.StringIO(), io.StringIO()
    first = next(iter(files))
    piped = io.TextIOWrapper(io.BytesIO(files[first] if stdin else b""))
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        argv = ["expand", "-f", "-" if stdin else str(Path(tmp) / first)]
        argv += [str(Path(tmp) / o) if o in files else o for o in options]
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            mock.patch.object(sys, "stdin", piped),
        ):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


@needs_cases
@fuzz(TARGET, ci_examples=150)
@given(runs())
# Hazards issue 12 names (a traceback there once):
@example({"files": {"manifests.yaml": b"kind: VirtualMachine\nspec: &r [*r]\n"}, "options": ["-o", "json"]})
def test_the_command_line_exits_cleanly(run: dict[str, Any]) -> None:
    count(TARGET)
    size = sum(len(data) for data in run["files"].values())
    code, out, err = run_cli(run["files"], run["options"], stdin=run.get("stdin", False))
    event(f"exit {code}")
    assert code in (0, 1, 2, 3), (code, err[-2000:])
    assert "Traceback" not in err, err[-4000:]
    assert "Internal error occurred" not in err, err[-4000:]
    if code:
        assert err.strip(), "a failure without a message"
        assert err.splitlines()[0].startswith(("error:", "refused:", "unresolved:", "Warning:", "usage:")), (
            err[:500]
        )
    if code in (0, 1, 3):  # verdicts were reached: the summary line ends the run
        assert err.splitlines()[-1].startswith("summary: "), err[-500:]
    fmt = run["options"][run["options"].index("-o") + 1]
    if fmt == "jsonl":
        # One result per line, every line the same members, an outcome the exit code agrees with.
        results = [json.loads(line) for line in out.splitlines()]
        assert all(list(r) == JSONL_MEMBERS for r in results), out[:2000]
        outcomes = {r["outcome"] for r in results}
        assert outcomes <= {"Admitted", "Refused", "Unresolved", "Error"}
        assert code != 0 or outcomes == {"Admitted"}
        assert code != 1 or ("Refused" in outcomes and "Error" not in outcomes)
        assert code != 3 or ("Unresolved" in outcomes and not outcomes & {"Refused", "Error"})
    elif not code:
        assert out.strip()
        # What was printed reads back, and -o yaml says what -o json says (kubectl reads the YAML
        # as the server's reader does: every string that would read as something else is quoted).
        other = "yaml" if fmt == "json" else "json"
        options = [
            other if o == fmt and i and run["options"][i - 1] == "-o" else o
            for i, o in enumerate(run["options"])
        ]
        code2, out2, _ = run_cli(run["files"], options, stdin=run.get("stdin", False))
        assert code2 == 0
        as_json, as_yaml = (out, out2) if fmt == "json" else (out2, out)
        from_yaml = [doc.value for doc in read_documents(as_yaml) if doc.value is not None]
        from_json = json.loads(as_json)
        assert (from_yaml if len(from_yaml) > 1 else from_yaml[0]) == (
            from_json["items"] if len(from_yaml) > 1 else from_json
        )
    # Bounded: aliases cannot multiply the input, errors do not repeat it at length.
    assert len(out) + len(err) <= 16 * size + 512 * 1024, (len(out), len(err), size)


@needs_cases
def test_the_fuzz_helpers_run_the_real_command_line() -> None:
    """The harness itself: a good case expands (exit 0), a file with no VM is a usage error (exit 2)."""
    docs = case(first_case("docs"))
    good = _write([docs.input["vm"], *docs.input["objects"]], "yaml").encode()
    code, out, err = run_cli({"m.yaml": good}, ["--field-validation", "Ignore"])
    assert (code, err) == (0, "summary: 1 VM, 1 admitted, 0 refused, 0 errors, 1 file\n")
    assert yaml.safe_load(out)["kind"] == "VirtualMachine"
    code, out, err = run_cli({"m.yaml": b"kind: ConfigMap\nmetadata: {name: x}\n"}, [])
    assert code == 2 and out == "" and err.startswith("error: no VirtualMachine found in ")
