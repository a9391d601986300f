#!/usr/bin/env python3
"""Generate apiserver/catalogs/: the common-instancetypes releases ``--catalog common-instancetypes`` reads.

Reads ../shared/catalogs/common-instancetypes/ (each release's cluster instancetypes and preferences as a
cluster holds them, built from common-instancetypes' source, Apache-2.0) and writes, per release, one
multi-document YAML stream compressed with gzip (``v1.7.0.yaml.gz``: about 5 KB where the YAML is
150 KB), written byte for byte the same on every run (no timestamp in the gzip header), with
``index.json`` (each release's tag, date, commit, names and counts, for ``kubevirt-expand catalog list``
and the names a run suggests),
the project's licence and a README saying where the data came from. The product never reads ../shared;
rerun this when the shared catalogs change:

    .venv/bin/python -m hack.generators.catalogs            # write apiserver/catalogs/
    .venv/bin/python -m hack.generators.catalogs --check    # exit 1 if what is committed is out of date
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "catalogs" / "common-instancetypes"
OUT = REPO / "apiserver" / "catalogs" / "common-instancetypes"
FILES = ("clusterinstancetypes.yaml", "clusterpreferences.yaml")
SOURCE = "https://github.com/kubevirt/common-instancetypes"
# | `v1.5.1/` | v1.5.1 (2025-10-14) | d0f10bc... | 55 | 54 | in the shared README's table
_ROW = re.compile(r"^\| `(v[^/`]+)/` \| (\S+) \((\d{4}-\d\d-\d\d)\) \| ([0-9a-f]{40}) \|")

README = """\
# common-instancetypes, bundled

The cluster-wide instancetypes and preferences of KubeVirt's common-instancetypes project
({source}), as a cluster holds them (virt-operator deploys them by default): each release's
`VirtualMachineClusterInstancetypes/` and `VirtualMachineClusterPreferences/`, built from its source at the
release tag with `kubectl kustomize`, unmodified, one gzip-compressed YAML stream per release:

| file | tag | date | commit | instancetypes | preferences |
|---|---|---|---|---|---|
{rows}

Copyright The KubeVirt Authors, licensed under the Apache License 2.0 (`LICENSE`, common-instancetypes'
own). `kubevirt-expand expand --catalog common-instancetypes` (the newest) or
`--catalog common-instancetypes@v1.6.0` reads them; `kubevirt-expand catalog list` lists them.
Written by `hack/generators/catalogs.py`; do not edit.
"""


def releases() -> list[dict[str, Any]]:
    """The shared README's releases (tag, date, commit), oldest first."""
    found = []
    for line in (SHARED / "README.md").read_text().splitlines():
        match = _ROW.match(line)
        if match:
            folder, tag, date, commit = match.groups()
            if folder != tag:
                raise SystemExit(f"{SHARED}/README.md: folder {folder} holds tag {tag}")
            found.append({"version": tag, "date": date, "commit": commit})
    if not found:
        raise SystemExit(f"{SHARED}/README.md: no release table found")
    return found


def stream(version: str) -> tuple[bytes, dict[str, list[str]]]:
    """The release's two files as one stream (a ``---`` between them) and its names by kind."""
    parts = [(SHARED / version / name).read_text() for name in FILES]
    text = "---\n".join(p if p.endswith("\n") else p + "\n" for p in parts)
    names: dict[str, list[str]] = {}
    for doc in yaml.safe_load_all(text):
        if doc:
            names.setdefault(doc["kind"], []).append(doc["metadata"]["name"])
    return text.encode(), {kind: sorted(found) for kind, found in names.items()}


def generate() -> dict[str, bytes]:
    """Every file of ``OUT`` by name."""
    out: dict[str, bytes] = {}
    index = []
    for release in releases():
        data, names = stream(release["version"])
        name = f"{release['version']}.yaml.gz"
        out[name] = gzip.compress(data, compresslevel=9, mtime=0)
        instancetypes = names.get("VirtualMachineClusterInstancetype", [])
        preferences = names.get("VirtualMachineClusterPreference", [])
        index.append(
            {
                **release,
                "file": name,
                "instancetypes": len(instancetypes),
                "preferences": len(preferences),
                # for "did you mean" and "the bundled catalog holds it" without reading the release
                "instancetypeNames": instancetypes,
                "preferenceNames": preferences,
            }
        )
    meta = {"name": "common-instancetypes", "source": SOURCE, "license": "Apache-2.0", "releases": index}
    out["index.json"] = (json.dumps(meta, indent=1) + "\n").encode()
    out["LICENSE"] = (SHARED / "LICENSE").read_bytes()
    rows = "\n".join(
        f"| `{r['file']}` | {r['version']} | {r['date']} | {r['commit']} | {r['instancetypes']} | "
        f"{r['preferences']} |"
        for r in index
    )
    out["README.md"] = README.format(source=SOURCE, rows=rows).encode()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if apiserver/catalogs/ is out of date")
    args = parser.parse_args(argv)
    files = generate()
    existing = {p.name for p in OUT.iterdir()} if OUT.is_dir() else set()
    stale = sorted(
        name
        for name, data in files.items()
        if not (OUT / name).is_file() or (OUT / name).read_bytes() != data
    )
    extra = sorted(existing - set(files))
    if args.check:
        if stale or extra:
            print(
                f"out of date: {', '.join(stale + extra)}; rerun: .venv/bin/python -m hack.generators.catalogs"
            )
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name in extra:
        (OUT / name).unlink()
    for name, data in files.items():
        (OUT / name).write_bytes(data)
    print(f"wrote {len(files)} files to {OUT.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
