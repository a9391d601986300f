"""Tenancy by construction (apiserver/sources/scope.py): a Scope is made in one place, granted by one
filter, and every read of tenant data takes one. These checks read the package's source, so a change that
would make a second way in fails here, not in a review."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from apiserver.sources import reads
from apiserver.sources.rendered.store import RenderedStore, ScopedSnapshot
from apiserver.sources.scope import Scope

PACKAGE = Path(__file__).resolve().parents[2] / "apiserver"


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(PACKAGE.parent)), ast.parse(path.read_text(), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def _calls(tree: ast.Module, name: str) -> list[int]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if called == name:
                found.append(node.lineno)
    return found


def _imports(tree: ast.Module, module: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == module:
            return True
        if isinstance(node, ast.Import) and any(alias.name == module for alias in node.names):
            return True
    return False


def test_a_scope_is_made_only_by_grant() -> None:
    made = {path: lines for path, tree in _modules() if (lines := _calls(tree, "Scope"))}
    assert made == {"apiserver/sources/grant.py": made.get("apiserver/sources/grant.py", [])}
    assert made["apiserver/sources/grant.py"], "grant() makes the Scope"


def test_only_the_authorization_filter_imports_grant() -> None:
    importers = [path for path, tree in _modules() if _imports(tree, "apiserver.sources.grant")]
    assert importers == ["apiserver/http/filters/scoping.py"]


@pytest.mark.parametrize(
    ("owner", "method"),
    [
        (RenderedStore, "get"),
        (RenderedStore, "current"),
        (RenderedStore, "snapshot"),
        (RenderedStore, "continued"),
        (RenderedStore, "entries_after"),
        (reads.Reads, "within"),
    ],
)
def test_every_read_of_tenant_data_takes_a_scope(owner: type, method: str) -> None:
    hints = inspect.get_annotations(getattr(owner, method), eval_str=True)
    assert Scope in hints.values(), f"{owner.__name__}.{method} reads without a Scope: {hints}"


def test_nothing_public_of_the_store_hands_out_items_without_a_scope() -> None:
    """The store's public attributes are versions, counts and the scoped reads above: its items, its
    keys, its log and its snapshots are private (ruff's SLF001 keeps other modules out of them)."""
    public = {name for name in vars(RenderedStore) if not name.startswith("_")}
    reading = {"get", "current", "snapshot", "continued", "entries_after", "keep_snapshot"}
    harmless = {
        "attach", "changed", "progressed", "pending", "run", "size", "wait_for", "resume_point",
        "last_seq", "next_change", "parse_version", "stats",
    }  # fmt: skip
    assert public <= reading | harmless, public - reading - harmless
    assert {name for name in vars(ScopedSnapshot) if not name.startswith("_")} == {"version", "window"}
