"""The chunker writes each chunk's lexical vector as tsvector text built in its workers
(``lexical_vector``); PostgreSQL must read back exactly what ``to_tsvector('simple', tokens)``
gives, for every chunk of a generated repository and for the tokens most likely to differ."""

from __future__ import annotations

import random

from palimpsest.chunker.work import analyze_blob
from palimpsest.core.db import system_tx
from palimpsest.core.service import Infra
from palimpsest.devtools.bench.index import generate
from palimpsest.index.tokens import MAX_TOKEN_BYTES, code_tokens, lexical_vector

# the parser's number-like, host-like and keyword-like words; repeats beyond the 255 positions a
# lexeme keeps; a token of the longest kept length
TRICKY = [
    "1e 0x1f 123 007 e10 12e a1b2 1a 0 00 nan infinity inf www com org http https ftp 1ex 1e1ex",
    " ".join(["loop"] * 255 + ["other"] + ["loop"] * 10),
    " ".join(["loop"] * 255 + ["other"] * 255),
    " ".join(f"t{i % 40}" for i in range(2_000)),
    "x" * MAX_TOKEN_BYTES + " short",
    "",
    "a",
    "mixed  double  spaces",
]


async def test_the_built_vector_is_what_to_tsvector_gives(infra: Infra) -> None:
    texts = list(TRICKY)
    for path, text, _ in generate(60, 30_000):
        blob = analyze_blob(path, "0" * 40, text.encode(), 256 * 1024)
        texts.extend(chunk[6] for chunk in blob.chunks)
    texts.append(code_tokens("getUserName(order_id: OrderId) -> crate::net::Client 0xFF v2Api"))
    rng = random.Random(23)
    letters, digits = "abcdefx", "0123456789"
    for _ in range(400):  # letters and digits mixed every way, first of all around an 'e'
        words = ["".join(rng.choice(letters + digits) for _ in range(rng.randint(1, 7))) for _ in range(8)]
        texts.append(" ".join(words))
    vectors = [lexical_vector(t) for t in texts]
    kept = [(t, v) for t, v in zip(texts, vectors, strict=True) if v is not None]
    assert len(kept) > len(texts) * 3 // 4
    texts, vectors = [t for t, _ in kept], [v for _, v in kept]
    async with system_tx(infra.pool) as conn:
        cur = await conn.execute(
            "SELECT t.i, to_tsvector('simple', t.tokens)::text AS parsed, t.vector::tsvector::text AS built"
            " FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(tokens, vector, i)"
            " WHERE to_tsvector('simple', t.tokens) IS DISTINCT FROM t.vector::tsvector",
            (texts, vectors),
        )
        assert await cur.fetchall() == []


def test_text_only_postgresql_can_split_is_left_to_it() -> None:
    assert lexical_vector("straße café") is None
    assert lexical_vector(code_tokens("naïveParser")) is None
    assert lexical_vector("get user getuser user") == "get:1 getuser:3 user:2,4"
    assert lexical_vector(" ".join(["loop"] * 256)) is None  # to_tsvector keeps 255 positions
    assert lexical_vector(" ".join(["loop"] * 255 + ["other"] * 255)) is not None
    assert lexical_vector("value 5e5e5") is None  # the parser reads 5e5, then e5
    assert lexical_vector("ok 1e5") is None
