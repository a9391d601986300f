"""The fuzz targets' mutators must themselves never fail: an IndexError in ``text_mutated`` (every line
deleted, then a value edited) once failed CI's derandomized run although the product was fine."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fuzzing import text_mutated


@settings(max_examples=300, database=None, deadline=None)
@given(st.sampled_from(["", "a: 1", "a: 1\nb: 2", "a:\n- 1\n- 2\n"]), st.data())
def test_text_mutated_edits_any_text_even_one_emptied_by_its_own_deletes(
    text: str, data: st.DataObject
) -> None:
    mutated = data.draw(text_mutated(text, most=6))
    assert isinstance(mutated, bytes)
