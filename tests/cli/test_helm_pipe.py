"""``helm template | kubevirt-expand expand -f -``: a chart's rendered output read from stdin, as helm writes
it (every document after ``---`` and a ``# Source:`` comment), judged document by document, with the
stream's own document numbers and lines in the reports. tests/cli/helm holds the chart and its output
(``rendered.yaml``); docs/ci-automation.md's recipe runs the same pipe (tests/project/test_readme_recipes.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_expand_gate import cli
from tests.cli.test_reports import line_of

HERE = Path(__file__).parent
RENDERED = HERE / "helm" / "rendered.yaml"
CATALOG = HERE / "gitops" / "catalog" / "common-clusterinstancetypes-bundle.yaml"


def test_the_rendered_chart_is_judged_from_stdin_with_the_streams_documents_and_lines(tmp_path: Path) -> None:
    proc = cli(
        "-f",
        "-",
        "--catalog",
        str(CATALOG),
        "--check",
        "-o",
        "jsonl",
        cwd=tmp_path,
        stdin=RENDERED.read_text(),
    )
    assert proc.returncode == 1, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["file"], r["document"], r["name"], r["outcome"]) for r in results] == [
        ("<stdin>", 2, "shop-cache", "Admitted"),
        ("<stdin>", 3, "shop-db", "Refused"),
    ]
    (cause,) = results[1]["causes"]
    assert cause["field"] == "spec.template.spec.domain.cpu.sockets"
    assert cause["line"] == line_of(RENDERED, "sockets: 4")
    assert "skipped: 1 Service" in proc.stderr
    assert "error:" not in proc.stderr


def test_helms_comments_and_separators_are_not_documents(tmp_path: Path) -> None:
    """A stream that opens with ``---``, a ``# Source:`` comment before each object and a template that
    rendered to nothing (a ``---`` followed by only a comment, as helm writes for an empty template) gives
    no empty or broken document: the same verdicts as the objects alone, in files of their own."""
    text = RENDERED.read_text()
    empty = "---\n# Source: shop/templates/empty.yaml\n"
    piped = cli("-f", "-", "--catalog", str(CATALOG), "--check", cwd=tmp_path, stdin=empty + text + empty)
    documents = [part for part in text.split("---\n") if part.strip()]
    for n, document in enumerate(documents):
        (tmp_path / f"{n}.yaml").write_text(document)
    split = cli("-f", str(tmp_path), "--catalog", str(CATALOG), "--check", cwd=tmp_path)
    assert piped.returncode == split.returncode == 1, piped.stderr
    verdicts = [
        line.split(": ", 1)[0]
        for line in piped.stderr.splitlines()
        if line.startswith(("admitted", "refused"))
    ]
    assert verdicts == ["admitted", "refused"]
    assert "error:" not in piped.stderr, piped.stderr
    assert piped.stderr.splitlines()[-1] == split.stderr.splitlines()[-1].replace(
        f"{len(documents)} files", "1 file"
    )
