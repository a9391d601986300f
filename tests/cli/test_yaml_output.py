"""``-o yaml`` is written by libyaml's emitter where it gives the bytes PyYAML's own emitter gives, and by
PyYAML's where it may not (apiserver/cli/output.py): the same bytes either way, for every value."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apiserver.cli.output import _c_writes_alike, to_yaml, to_yaml_pure

_ALPHABET = [chr(c) for c in range(0x20, 0x7F)] + ["\n", "\t", "é", "\x85", "\u2028", "\U0001f600"]
TEXTS = (
    st.text(alphabet=st.sampled_from(_ALPHABET), max_size=30)
    | st.text(alphabet=st.sampled_from(_ALPHABET), min_size=90, max_size=300)
    | st.text(max_size=10)
    # What go-yaml would read as something else, YAML's indicators, and line breaks at the edges.
    | st.sampled_from(["y", "n", "1e3", "0o17", ".5", "~", "null", "-", "--- x", "a: b", "#x", " x", "x "])
    | st.sampled_from(["\n", "x\n", "\nx", "x\n\n", "a\n b\n", "#cloud-config\npassword: x\n"])
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXTS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXTS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=1500, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.dictionaries(TEXTS, VALUES, max_size=5))
def test_the_fast_writer_gives_the_same_bytes(value: dict[str, Any]) -> None:
    assert to_yaml(value) == to_yaml_pure(value)


def test_a_vm_of_printable_ascii_takes_the_fast_path() -> None:
    """The fast path is taken for the VMs it is for (else the test above compares PyYAML with itself)."""
    vm = {
        "kind": "VirtualMachine",
        "metadata": {"name": "fedora", "labels": {"app.kubernetes.io/name": "y"}},
        "spec": {
            "template": {"spec": {"volumes": [{"cloudInitNoCloud": {"userData": "#cloud-config\nx: 1\n"}}]}}
        },
        "status": {},
    }
    assert _c_writes_alike(vm)
    assert not _c_writes_alike({"metadata": {"name": "caf\u00e9"}})
    assert not _c_writes_alike({"": 1})


def test_a_value_held_twice_is_written_as_pyyaml_writes_it() -> None:
    """PyYAML anchors a dict it meets twice; the fast path does not, so it leaves such values alone."""
    shared = {"bus": "virtio"}
    value = {"a": shared, "b": shared}
    assert not _c_writes_alike(value)
    assert to_yaml(value) == to_yaml_pure(value)
    assert "&id001" in to_yaml(value)
