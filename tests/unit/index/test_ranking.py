"""The static prior of lexical search by the shared classifier's kind (issue 55, migration 0056)."""

from __future__ import annotations

import pytest

from palimpsest.index.codefacts.classify import Kind
from palimpsest.index.ranking import KIND_PRIORS, TOOLING_PRIOR, file_prior


@pytest.mark.parametrize(
    ("path", "prior"),
    [
        ("src/kafka/producer.py", 1.0),
        ("clients/src/main/java/org/apache/kafka/KafkaProducer.java", 1.0),
        ("scripts/release.py", TOOLING_PRIOR),
        ("docs/guide.md", 0.9),
        ("examples/hello/main.go", 0.7),
        ("tests/test_producer.py", 0.6),
        ("pkg/server/server_test.go", 0.6),
        ("dist/bundle.min.js", 0.4),
        ("vendor/github.com/x/y/z.go", 0.4),
    ],
)
def test_a_files_prior_is_its_kinds(path: str, prior: float) -> None:
    assert file_prior(path) == prior


def test_product_code_weighs_most_and_every_prior_is_in_range() -> None:
    assert set(KIND_PRIORS) == set(Kind)
    assert all(0 < p <= 1 for p in KIND_PRIORS.values())
    assert max(KIND_PRIORS.values()) == KIND_PRIORS[Kind.CODE] == 1.0
    for kind in (Kind.TEST, Kind.EXAMPLE, Kind.GENERATED, Kind.VENDORED):
        assert KIND_PRIORS[kind] < TOOLING_PRIOR < KIND_PRIORS[Kind.CODE]
