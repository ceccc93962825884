"""The throughput command runs end to end on a small generated corpus (no timing asserted)."""

from __future__ import annotations

import json

import pytest

from palimpsest.chunker.parsing import analyze_file
from palimpsest.devtools.bench.parsing import generate_typescript_corpus, main


def test_generated_corpus_is_deterministic_valid_typescript() -> None:
    first = list(generate_typescript_corpus(60_000, seed=3))
    assert first == list(generate_typescript_corpus(60_000, seed=3))
    assert sum(len(text) for _, text in first) >= 60_000
    for path, text in first:
        assert analyze_file(path, text, "typescript").parse_errors == 0


def test_main_prints_the_measurement_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--mb", "0.05"])
    report = json.loads(capsys.readouterr().out)
    assert report["bytes"] >= 50_000
    assert report["chunks"] > 0
    assert set(report) >= {"analyze_mb_per_s", "token_mb_per_s", "vector_mb_per_s", "files"}
