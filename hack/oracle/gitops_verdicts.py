"""KubeVirt's verdicts on the VMs of the GitOps fixture (tests/cli/gitops), for tests/cli/test_gitops.py.

For every VM of ``tests/cli/gitops/repo`` (read as ``kubevirt-expand expand`` reads it: templates/ excluded,
what is not a KubeVirt object passed over, the namespace defaulted to ``default``), asks KubeVirt's own code,
with the catalog (``tests/cli/gitops/catalog``) and without it:

- ``expand-oracle``: what virt-api's expand-spec answers (the expanded VM, or the error and its kind);
- ``expand-admit``: whether the VM webhook admits it on CREATE, and its causes.

and writes the answers, as the oracles gave them, to ``tests/cli/gitops/oracle.json`` (committed: CI has
no oracle). Rerun after changing the fixture::

    .venv/bin/python -m hack.oracle.gitops_verdicts [--expand-oracle PATH] [--admit-oracle PATH]

(the oracles default to ``$KUBEVIRT_EXPAND_ORACLE`` and ``$KUBEVIRT_EXPAND_ADMIT_ORACLE``, else ``../oracle/bin``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from apiserver.documents.manifests import read_files

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "cli" / "gitops"
OUT = FIXTURE / "oracle.json"
DEFAULT_BIN = REPO.parent / "oracle" / "bin"  # where ../shared/oracle/build.sh is told to put them


def _oracle(path: str, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    text = "".join(json.dumps(line) + "\n" for line in lines)
    proc = subprocess.run([path], input=text, capture_output=True, text=True, timeout=300, check=True)
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    if len(answers) != len(lines):
        raise SystemExit(f"{path}: {len(answers)} answers for {len(lines)} inputs: {proc.stderr[-2000:]}")
    return answers


def fixture_vms() -> list[tuple[str, dict[str, Any]]]:
    """(file relative to the repo, VM) of every KubeVirt VM of the fixture, in the command line's order."""
    root = FIXTURE / "repo"
    vms = []
    files = read_files([str(root)], foreign=True, exclude=lambda path, is_dir: Path(path).name == "templates")
    for file in files:
        assert file.error is None, file.error
        for manifest in file.manifests:
            obj = manifest.object
            if obj["kind"] == "VirtualMachine" and str(obj.get("apiVersion", "")).startswith("kubevirt.io/"):
                obj["metadata"].setdefault("namespace", "default")
                vms.append((str(Path(file.source).relative_to(root)), obj))
    return vms


def catalog_objects() -> list[dict[str, Any]]:
    return [m.object for f in read_files([str(FIXTURE / "catalog")]) for m in f.manifests]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--expand-oracle",
        default=os.environ.get("KUBEVIRT_EXPAND_ORACLE") or str(DEFAULT_BIN / "expand-oracle"),
    )
    parser.add_argument(
        "--admit-oracle",
        default=os.environ.get("KUBEVIRT_EXPAND_ADMIT_ORACLE") or str(DEFAULT_BIN / "expand-admit"),
    )
    args = parser.parse_args(argv)
    vms = fixture_vms()
    catalog = catalog_objects()
    answers: dict[str, Any] = {}
    for label, objects in (("withCatalog", catalog), ("withoutCatalog", [])):
        lines = [{"vm": vm, "objects": objects} for _, vm in vms]
        expanded = _oracle(args.expand_oracle, lines)
        admitted = _oracle(
            args.admit_oracle, [{**line, "namespace": line["vm"]["metadata"]["namespace"]} for line in lines]
        )
        for (source, vm), expand_answer, admit_answer in zip(vms, expanded, admitted, strict=True):
            key = f"{vm['metadata']['namespace']}/{vm['metadata']['name']}"
            entry = answers.setdefault(key, {"file": source})
            expand_answer.pop("admission", None)  # expand-admit's whole webhook is the verdict kept
            entry[label] = {"expand": expand_answer, "admit": admit_answer}
    OUT.write_text(json.dumps(dict(sorted(answers.items())), indent=1) + "\n")
    print(f"wrote {OUT.relative_to(REPO)}: {len(answers)} VMs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
