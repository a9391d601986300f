"""``read_files(foreign=True, exclude=...)``: what the command line passes over. Documents that are no
Kubernetes object are noted, not errors, and only where asked (the folder source still refuses them);
excluded files and folders are not read at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiserver.documents.manifests import Foreign, ManifestError, foreign_document, load_manifests, read_files

WORKFLOW = "name: CI\non: [push]\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
VM = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: a}\n"


@pytest.mark.parametrize(
    ("doc", "what"),
    [
        ({"name": "CI", "on": ["push"]}, "a mapping without kind or metadata"),
        ({"apiVersion": "v2", "name": "chart", "version": "1.0.0"}, "a mapping without kind or metadata"),
        (["a", "b"], "a list"),
        ("hello", "a string"),
        (3, "a number"),
        ({"kind": "Deployment"}, None),
        ({"metadata": {"name": "lost-its-kind"}}, None),  # broken, not foreign
    ],
)
def test_foreign_document(doc: object, what: str | None) -> None:
    assert foreign_document(doc) == what


def test_foreign_documents_are_noted_only_where_asked() -> None:
    data = f"{WORKFLOW}---\n{VM}"
    with pytest.raises(ManifestError, match="kind is missing"):
        load_manifests(data, "mixed.yaml")
    passed: list[Foreign] = []
    (manifest,) = load_manifests(data, "mixed.yaml", foreign=passed)
    assert manifest.object["metadata"]["name"] == "a" and manifest.document == 2
    assert passed == [Foreign("mixed.yaml", 1, "a mapping without kind or metadata")]
    # A mapping with metadata but no kind stays an error: a VM that lost its kind must not pass unseen.
    with pytest.raises(ManifestError, match="kind is missing"):
        load_manifests("metadata: {name: a}\n", "vm.yaml", foreign=[])


def test_exclude_prunes_folders_and_files(tmp_path: Path) -> None:
    for rel in ("vms/a.yaml", "vms/legacy/b.yaml", "charts/web/templates/c.yaml", "charts/web/Chart.yaml"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(VM if rel.startswith("vms") else "x: {{ broken\n")
    asked: list[tuple[str, bool]] = []

    def exclude(path: str, is_dir: bool) -> bool:
        asked.append((Path(path).relative_to(tmp_path).as_posix(), is_dir))
        return Path(path).name in ("charts", "legacy")

    files = read_files([str(tmp_path)], exclude=exclude, foreign=True)
    assert [Path(f.source).relative_to(tmp_path).as_posix() for f in files] == ["vms/a.yaml"]
    assert all(f.error is None for f in files)
    # An excluded folder's content is never looked at.
    assert ("charts", True) in asked and not any(p.startswith("charts/") for p, _ in asked)
