"""The static prior of lexical search by the shared classifier's kind (issue 55, migrations 0056, 0057)."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from palimpsest.index.codefacts.classify import Kind
from palimpsest.index.ranking import KIND_PRIORS, TIER_BOUNDS, TOOLING_PRIOR, file_prior


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


def test_the_tiers_split_the_priors_where_the_migration_does() -> None:
    """The partial indexes' predicates are the bounds ranking.py states, and no prior sits near a
    bound (a real near a bound could fall on either side of it)."""
    migration = files("palimpsest.core").joinpath("migrations/0057_lexical_tiers.sql").read_text()
    predicates = re.findall(r"CREATE INDEX code_chunks_lexical_\w+ .* WHERE (.*);", migration)
    indexed = {float(bound) for p in predicates for bound in re.findall(r"prior [<>]=? ([0-9.]+)", p)}
    assert indexed == set(TIER_BOUNDS)
    for prior in (*KIND_PRIORS.values(), TOOLING_PRIOR):
        assert all(abs(prior - bound) >= 0.01 for bound in TIER_BOUNDS), prior
    product = KIND_PRIORS[Kind.CODE]
    assert product >= max(TIER_BOUNDS) > TOOLING_PRIOR
    assert KIND_PRIORS[Kind.TEST] < min(TIER_BOUNDS) < KIND_PRIORS[Kind.EXAMPLE]
