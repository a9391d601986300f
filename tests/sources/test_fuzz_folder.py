"""Property: the folder source reads any file beside good ones without failing: a broken file is
reported (``/readyz?verbose``) and the good files keep being served, and every VM it did read renders
to a VM or a clean 400/422 Status.

The third user of the one hardened reader (after PUT bodies and the command line): golden conformance
cases written as YAML, their objects then their text mutated (tests/support/fuzzing.py).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from apiserver.sources.folder import FolderSource
from apiserver.sources.gather import render_and_record
from tests.support.fuzzing import (
    case,
    case_paths,
    check_status,
    count,
    fuzz,
    mutated,
    needs_cases,
    size_of,
    text_mutated,
    unlimited_int_text,
)
from tests.support.http_helpers import EXAMPLES

TARGET = "folder source"

GOOD = ("vm-fedora.yaml", "instancetypes.yaml", "preferences.yaml")


@st.composite
def folder_files(draw: st.DrawFn) -> tuple[bytes, bool, bool]:
    """A manifest file made from a mutated case, and the presets/validate options to render with."""
    golden = case(draw(case_paths))
    docs: Any = [golden.input["vm"], *golden.input["objects"]]
    if golden.input.get("kubevirt") is not None:
        docs.append(
            {"apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "metadata": {"name": "kv"}}
            | {"spec": {"configuration": golden.input["kubevirt"]}}
        )
    if draw(st.booleans()):
        docs = draw(mutated(docs, deep=False))
        docs = docs if isinstance(docs, list) else [docs]
    with unlimited_int_text():
        text = yaml.safe_dump_all(docs, sort_keys=False)
    data = draw(text_mutated(text)) if draw(st.booleans()) else text.encode()
    return data, draw(st.booleans()), draw(st.booleans())


async def _read_and_render(folder: Path, presets: bool, validate: bool) -> tuple[FolderSource, int]:
    source = FolderSource(folder, watch=False)
    await source.reload()
    rendered = 0
    for vm in list(source._snapshot.vms.values()):
        result = await render_and_record(source, vm, presets=presets, validate=validate)
        if result.error is not None:
            check_status(result.error.status, size_of(vm) + 65_536)
        else:
            assert result.result is not None and isinstance(result.result.vm, dict)
            rendered += 1
    return source, rendered


@needs_cases
@fuzz(TARGET, ci_examples=80)
@given(folder_files())
def test_the_folder_source_reads_any_file_beside_good_ones(file: tuple[bytes, bool, bool]) -> None:
    count(TARGET)
    data, presets, validate = file
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in GOOD:
            shutil.copy(EXAMPLES / name, folder / name)
        (folder / "fuzzed.yaml").write_bytes(data)
        source, rendered = asyncio.run(_read_and_render(folder, presets, validate))
    (check,) = source.checks()
    event("file refused" if not check.ok else f"file read, {rendered} VM(s) rendered")
    if not check.ok:
        assert check.message.startswith(str(folder / "fuzzed.yaml")), check.message
        assert "Traceback" not in check.message
        assert str(folder / GOOD[0]) not in check.message
    # The good files are served whatever the other file holds.
    assert asyncio.run(source.get_vm("default", "fedora")) is not None
