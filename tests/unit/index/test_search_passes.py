"""The tsqueries of lexical search: every token first, then any term held whole or by all its words."""

from __future__ import annotations

import pytest

from palimpsest.index.errors import InvalidQuery
from palimpsest.index.search import passes


def test_an_identifier_is_relaxed_to_all_of_its_words_never_to_one() -> None:
    assert passes("getUserName") == [
        "'getusername' & 'get' & 'user' & 'name'",
        "('getusername' | 'get' & 'user' & 'name')",
    ]


def test_words_are_a_phrase_first_then_all_then_each() -> None:
    assert passes("user name") == ["'user' <-> 'name'", "'user' & 'name'", "'user' | 'name'"]
    assert passes("account the cart")[0] == "'account' <-> 'the' <-> 'cart'"


def test_several_identifiers_each_keep_their_words_together() -> None:
    assert passes("KafkaProducer send") == [
        "'kafkaproducer' & 'kafka' & 'producer' & 'send'",  # a compound: no phrase pass
        "('kafkaproducer' | 'kafka' & 'producer') | 'send'",
    ]


@pytest.mark.parametrize("query", ["user", "getX", "__init__"])
def test_no_second_pass_where_it_could_find_nothing_more(query: str) -> None:
    assert len(passes(query)) == 1


def test_a_query_without_searchable_words_is_refused() -> None:
    with pytest.raises(InvalidQuery):
        passes("x + y")
