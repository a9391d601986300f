"""The catalogs shipped with the package: ``--catalog common-instancetypes[@VERSION]``, offline.

KubeVirt's common-instancetypes (Apache-2.0) is what most clusters' VMs name (``u1.medium``, ``fedora``);
a CI job with no network and no cluster still needs it to judge them. Its releases sit in
``apiserver/catalogs/common-instancetypes/`` (written by ``hack/generators/catalogs.py``: one gzip'd YAML
stream per release, ``index.json`` describing them, the licence and origin beside them), read here by
name. A name without ``@VERSION`` is the newest release; an existing file or folder of the same name
wins over a bundled catalog, so a ``--catalog`` that worked before keeps its meaning.

Every ``expand`` run imports this module (``--catalog``'s help names the catalog) and most never read a
catalog: what reading needs (json, gzip, difflib) is imported when first needed, to keep start-up short.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

NAME = "common-instancetypes"
FOLDER = Path(__file__).resolve().parents[1] / "catalogs" / NAME  # package data (pyproject.toml)


class UnknownCatalog(LookupError):
    """A bundled catalog's name with a release that is not bundled; ``str()`` is the message."""


@dataclass(frozen=True, slots=True)
class Release:
    """One bundled release, as ``index.json`` describes it."""

    name: str
    version: str
    date: str
    commit: str
    file: str
    instancetypes: int
    preferences: int
    source: str
    license: str
    instancetype_names: frozenset[str]
    preference_names: frozenset[str]

    @property
    def label(self) -> str:
        """``common-instancetypes@v1.7.0``: what ``--catalog`` takes, and how a run names it."""
        return f"{self.name}@{self.version}"


@cache
def releases() -> tuple[Release, ...]:
    """Every bundled release, newest first."""
    import json

    index: dict[str, Any] = json.loads((FOLDER / "index.json").read_text(encoding="utf-8"))
    found = [
        Release(
            name=str(index["name"]),
            version=str(r["version"]),
            date=str(r["date"]),
            commit=str(r["commit"]),
            file=str(r["file"]),
            instancetypes=int(r["instancetypes"]),
            preferences=int(r["preferences"]),
            source=str(index["source"]),
            license=str(index["license"]),
            instancetype_names=frozenset(r["instancetypeNames"]),
            preference_names=frozenset(r["preferenceNames"]),
        )
        for r in index["releases"]
    ]
    return tuple(sorted(found, key=lambda r: _version_key(r.version), reverse=True))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in version.lstrip("v").split("."))


def names() -> list[str]:
    """What ``--catalog`` accepts for the bundled catalogs: the bare name and each ``name@version``."""
    return [NAME, *(r.label for r in releases())]


def find(value: str) -> Release | None:
    """The release ``value`` names (``common-instancetypes``, ``common-instancetypes@v1.6.0`` or
    ``@1.6.0``), ``None`` when it names no bundled catalog. Raises :class:`UnknownCatalog` for the
    bundled name with a release that is not bundled."""
    name, at, version = value.partition("@")
    if name != NAME:
        return None
    if not at:
        return releases()[0]
    wanted = version if version.startswith("v") else f"v{version}"
    for release in releases():
        if release.version == wanted:
            return release
    bundled = ", ".join(r.version for r in releases())
    raise UnknownCatalog(
        f"{value}: no such release bundled (bundled: {bundled}; kubevirt-expand catalog list); for "
        f"another, download its bundle from {releases()[0].source}/releases and give the file"
    )


def read(release: Release) -> bytes:
    """The release's YAML stream: every VirtualMachineClusterInstancetype and -Preference."""
    import gzip

    return gzip.decompress((FOLDER / release.file).read_bytes())


def suggestion(value: str) -> str | None:
    """The bundled name closest to ``value`` (a ``--catalog`` that is no file), if one is close."""
    import difflib

    close = difflib.get_close_matches(value, names(), n=1, cutoff=0.75)
    return close[0] if close else None
