"""The chunker writes each chunk's lexical vector in tsvector's binary form, built in its workers
from the chunk's text (``code_vector``) and sent in a binary COPY; PostgreSQL must read back exactly
what ``to_tsvector('simple', code_tokens(content))`` gives, for every chunk of a generated
repository and for the texts most likely to differ, and every other field as it was."""

from __future__ import annotations

import random

from palimpsest.chunker.store import create_staging, stage
from palimpsest.chunker.work import analyze_blob, chunk_copy, chunk_rows
from palimpsest.core.db import Conn, system_tx
from palimpsest.core.service import Infra
from palimpsest.devtools.bench.index import generate
from palimpsest.index.tokens import MAX_TOKEN_BYTES, code_tokens, lexical_vector

# texts whose tokens are the parser's number-like, host-like and keyword-like words; repeats beyond
# the 255 positions a lexeme keeps; a token of the longest kept length
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
        texts.extend(chunk[5] for chunk in blob.chunks)
    texts.append("getUserName(order_id: OrderId) -> crate::net::Client 0xFF v2Api naïveParser")
    rng = random.Random(23)
    letters, digits = "abcdefx", "0123456789"
    for _ in range(400):  # letters and digits mixed every way, first of all around an 'e'
        words = ["".join(rng.choice(letters + digits) for _ in range(rng.randint(1, 7))) for _ in range(8)]
        texts.append(" ".join(words))
    documents = [code_tokens(t) for t in texts]
    assert sum(lexical_vector(d) is not None for d in documents) > len(texts) * 3 // 4
    chunks = [(i, "window", None, 1, 1, t) for i, t in enumerate(texts)]
    async with system_tx(infra.pool) as conn:
        await _stage(conn, chunks)
        cur = await conn.execute(
            "SELECT t.i, to_tsvector('simple', t.tokens)::text AS parsed, s.vector::text AS built"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS t(tokens, i) JOIN stage_code_chunks s ON s.ordinal = t.i - 1"
            " WHERE to_tsvector('simple', t.tokens) IS DISTINCT FROM coalesce(s.vector, to_tsvector('simple', s.tokens))"
            "   OR (s.vector IS NULL) = (s.tokens IS NULL)",
            (documents,),
        )
        assert await cur.fetchall() == []
        cur = await conn.execute("SELECT count(*) AS n FROM stage_code_chunks")
        assert await cur.fetchone() == {"n": len(texts)}


async def _stage(conn: Conn, chunks: list[tuple[int, str, str | None, int, int, str]]) -> None:
    await create_staging(conn)
    await stage(conn, "code_chunks", chunk_copy(chunk_rows("ab" * 20, chunks)))


async def test_every_field_of_a_chunk_row_is_read_back_as_written(infra: Infra) -> None:
    chunks = [
        (
            0,
            "function",
            "getUserName",
            3,
            12,
            "def get(a,\tb):\r\n    return '\\N' \\ 'é' \U0001f600\n",
        ),
        (1, "window", None, 13, 72, ""),
        (2, "class", "Nul\x00Name", 1, 2_000_000, "a\x00b naïve"),
    ]
    async with system_tx(infra.pool) as conn:
        await _stage(conn, chunks)
        cur = await conn.execute(
            "SELECT blob_sha, ordinal, kind, name, start_line, end_line, content, tokens, vector::text AS vector"
            " FROM stage_code_chunks ORDER BY ordinal"
        )
        rows = await cur.fetchall()
    assert [tuple(r.values()) for r in rows] == [
        # text that is not ASCII whose tokens are: the vector all the same
        ("ab" * 20, 0, "function", "getUserName", 3, 12, chunks[0][5], None, "'def':1 'get':2 'return':3"),
        ("ab" * 20, 1, "window", None, 13, 72, "", None, ""),
        # a token that is not ASCII: the tokens, for to_tsvector
        ("ab" * 20, 2, "class", "Nul\ufffdName", 1, 2_000_000, "a\ufffdb naïve", "naïve", None),
    ]
    assert chunk_copy([]) == b""


def test_text_only_postgresql_can_split_is_left_to_it() -> None:
    assert lexical_vector("straße café") is None
    assert lexical_vector(code_tokens("naïveParser")) is None
    # three lexemes in bytewise order, each NUL-terminated with its position count and positions
    assert lexical_vector("get user getuser user") == (
        b"\0\0\0\3get\0\0\1\0\1getuser\0\0\1\0\3user\0\0\2\0\2\0\4"
    )
    assert lexical_vector(" ".join(["loop"] * 256)) is None  # to_tsvector keeps 255 positions
    assert lexical_vector(" ".join(["loop"] * 255 + ["other"] * 255)) is not None
    assert lexical_vector("value 5e5e5") is None  # the parser reads 5e5, then e5
    assert lexical_vector("ok 1e5") is None
