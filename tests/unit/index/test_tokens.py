"""Code-aware lexical tokens: identifier splitting, path handling and tsvector limits."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palimpsest.index import tokens
from palimpsest.index.tokens import (
    MAX_DOCUMENT_BYTES,
    MAX_TOKEN_BYTES,
    MAX_TOKENS,
    QueryTerm,
    code_tokens,
    query_terms,
    query_tokens,
)

# What PostgreSQL's default parser keeps as one lexeme: no separators, no punctuation.
_ONE_LEXEME = re.compile(r"[^\W_]+")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("getUserName", "getusername get user name"),
        ("get_user_name", "getusername get user name"),
        ("get-user-name", "getusername get user name"),
        ("GetUserName", "getusername get user name"),
        ("HTTPServer", "httpserver http server"),
        ("XMLHttpRequest", "xmlhttprequest xml http request"),
        ("parseJSON2Yaml", "parsejson2yaml parse json yaml"),
        ("sha256sum", "sha256sum sha 256 sum"),
        ("MAX_RETRY_COUNT", "maxretrycount max retry count"),
        ("__init__", "init"),
        ("$scope", "scope"),
        ("return", "return"),
        ("x", ""),
    ],
)
def test_identifiers_are_kept_whole_and_split(text: str, expected: str) -> None:
    assert code_tokens(text) == expected


def test_paths_are_kept_whole_and_split_into_segments_and_words() -> None:
    assert code_tokens("src/billing/invoice_line.py") == (
        "srcbillinginvoicelinepy src billing invoiceline invoice line py"
    )
    assert code_tokens("palimpsest.index.tokens") == "palimpsestindextokens palimpsest index tokens"
    assert code_tokens("crate::net::Client") == "cratenetclient crate net client"


def test_every_spelling_of_a_name_shares_its_whole_token() -> None:
    spellings = ["fetchInvoiceTotal", "fetch_invoice_total", "fetch-invoice-total", "FetchInvoiceTotal"]
    assert {code_tokens(s).split()[0] for s in spellings} == {"fetchinvoicetotal"}


def test_query_tokens_use_the_same_rules_without_duplicates() -> None:
    assert query_tokens("getUser get_user") == ["getuser", "get", "user"]
    assert query_tokens("src/bill") == ["srcbill", "src", "bill"]
    assert query_tokens("  ") == []


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("getUserName", [QueryTerm(("getusername", "get", "user", "name"), ("get", "user", "name"))]),
        ("user name", [QueryTerm(("user",), ("user",)), QueryTerm(("name",), ("name",))]),
        ("HTTPServer http_server", [QueryTerm(("httpserver", "http", "server"), ("http", "server"))]),
        (
            "crate::net::Client",
            [QueryTerm(("cratenetclient", "crate", "net", "client"), ("crate", "net", "client"))],
        ),
        (
            "src/invoice_line",
            [
                QueryTerm(
                    ("srcinvoiceline", "src", "invoiceline", "invoice", "line"), ("src", "invoice", "line")
                )
            ],
        ),
        (
            "parseJSON2Yaml",
            [QueryTerm(("parsejson2yaml", "parse", "json", "yaml"), ("parse", "json", "yaml"))],
        ),
        ("getX", [QueryTerm(("getx", "get"), ())]),
        ("v2Client", [QueryTerm(("v2client", "client"), ())]),
        ("größeZahl", [QueryTerm(("größezahl",), ("größezahl",))]),
        ("x + y", []),
    ],
)
def test_query_terms_are_compounds_with_the_words_that_spell_them(query: str, terms: list[QueryTerm]) -> None:
    assert query_terms(query) == terms


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_query_terms_hold_the_query_tokens_and_only_tokens(query: str) -> None:
    terms = query_terms(query)
    tokens = [t for term in terms for t in term.tokens]
    assert list(dict.fromkeys(tokens)) == query_tokens(query)
    for term in terms:  # a document that holds the term holds each of its words as a token
        assert set(term.words) <= set(term.tokens)


def test_non_ascii_letters_are_kept() -> None:
    assert code_tokens("größeZahl café") == "größezahl café"


def test_tokens_are_single_postgres_lexemes() -> None:
    text = "a.b-c::d/e\\f $g_h iJ 12.5e3 'quoted' \"x-y\" ünï_cödé"
    assert all(_ONE_LEXEME.fullmatch(t) for t in code_tokens(text).split())


def test_tokens_longer_than_the_lexeme_limit_are_dropped() -> None:
    long_word = "a" * (MAX_TOKEN_BYTES + 1)
    fitting = "b" * MAX_TOKEN_BYTES
    assert code_tokens(f"{long_word} {fitting} ok") == f"{fitting} ok"
    assert code_tokens("é" * 1100) == ""  # 2 200 bytes


def _within_limits(document: str) -> None:
    tokens = document.split()
    assert len(tokens) <= MAX_TOKENS
    assert len(document.encode()) <= MAX_DOCUMENT_BYTES
    assert all(len(t.encode()) <= MAX_TOKEN_BYTES for t in tokens)


def test_a_5_mb_token_heavy_text_stays_under_the_tsvector_limits() -> None:
    words = [f"someVeryLongIdentifierName_{n}_withPartsAndMore{n % 97}" for n in range(60_000)]
    text = " ".join(words)
    text = (text * (5_000_000 // len(text) + 1))[:5_000_000]
    document = code_tokens(text)
    _within_limits(document)
    assert len(document.split()) > MAX_TOKENS - 20


def test_a_few_huge_distinct_tokens_are_bounded_by_bytes() -> None:
    text = " ".join(f"{n:05d}" + "x" * 2000 for n in range(1000))
    document = code_tokens(text)
    _within_limits(document)
    assert len(document.encode()) > MAX_DOCUMENT_BYTES - 3000


@settings(max_examples=50, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=3000))
def test_any_text_gives_bounded_single_lexemes(text: str) -> None:
    document = code_tokens(text)
    _within_limits(document)
    assert all(_ONE_LEXEME.fullmatch(t) for t in document.split())
    assert document == document.lower()


@given(st.text(alphabet="aZbY09_$.:-/\\", max_size=60))
def test_the_ascii_path_expands_as_the_general_one(text: str) -> None:
    for compound in tokens._COMPOUND.findall(text):
        for segment in tokens._SEGMENT_SEPARATORS.split(compound):
            assert tokens._ASCII_WORDS.findall(segment) == tokens._part_words(segment)


@given(st.text(alphabet="aZ_$9ü.:-/\\ \n", max_size=80))
def test_compounds_are_found_as_by_the_plain_pattern(text: str) -> None:
    plain = re.compile(r"[\w$]+(?:(?:::|[./\\-])[\w$]+)*")
    assert tokens._COMPOUND.findall(text) == plain.findall(text)


# The C form of lexical_vector must write exactly the Python form's bytes (or say it cannot).
_VECTOR_TEXTS = [
    "",
    "a",
    "get user getuser user",
    "  x\ty\nz\x0bw\x0cv\rq  ",  # every ASCII separator bytes.split() knows
    "1e 0x1f 123 007 e10 12e a1b2 1a 0 00 1ex 1e1ex 5e5e5",
    " ".join(["loop"] * 255 + ["other"] * 255),
    " ".join(["loop"] * 256),
    " ".join(f"w{i}" for i in range(16_383)),  # every position tsvector stores
    " ".join(f"w{i}" for i in range(16_384)),  # one past them
    "x" * MAX_TOKEN_BYTES + " short x",
    "ab abc a ab\x00c",  # a prefix sorts first; NUL is an ordinary byte here
    "straße café",
    "file\x1cseparator unit\x1fseparator",  # str.split() splits there, bytes.split() does not
]


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
@pytest.mark.parametrize("text", _VECTOR_TEXTS, ids=range(len(_VECTOR_TEXTS)))
def test_the_c_vector_is_the_python_vector(text: str) -> None:
    assert tokens.lexical_vector(text) == tokens.python_lexical_vector(text)


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.lists(st.text(alphabet="abe0123456789xyz", min_size=1, max_size=6), max_size=400).map(" ".join)
    | st.text(alphabet="ab e1\t\n\x0b\x1c\x1f\x00é", max_size=200)
)
def test_any_token_list_gives_the_python_vector(text: str) -> None:
    assert tokens.lexical_vector(text) == tokens.python_lexical_vector(text)


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
def test_the_c_vector_of_real_code_is_the_python_vector() -> None:
    from palimpsest.devtools.bench.index import generate

    documents = [code_tokens(text) for _, text, _ in generate(40, 60_000)]
    assert all(tokens.lexical_vector(d) == tokens.python_lexical_vector(d) for d in documents)
    assert all(tokens.lexical_vector(d) is not None for d in documents)


def test_the_c_vector_is_built_where_a_compiler_is() -> None:
    """A checkout set up on a machine with a C compiler (``make setup``) has the C form: a build
    that silently fell back to Python would only show as a slower first build."""
    import shutil
    import sysconfig

    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    assert tokens.NATIVE or shutil.which(compiler) is None


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet="aZ_$9.:-/\\ \n\t(){}<>,;'\"#@", max_size=120))
def test_the_c_compound_scan_is_the_pattern(text: str) -> None:
    assert tokens._compounds(text) == tokens._COMPOUND.findall(text)


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
def test_the_c_compound_scan_leaves_other_text_to_the_pattern() -> None:
    from palimpsest.devtools.bench.index import generate
    from palimpsest.index import _lexical

    assert _lexical.compounds("a::b::c x.y a:b a:::b a.-b -a- ./x\\y $s_1") == [
        "a::b::c", "x.y", "a", "b", "a", "b", "a", "b", "a", "x\\y", "$s_1"
    ]  # fmt: skip
    assert _lexical.compounds("naïve_parser.ünïcode") is NotImplemented
    assert tokens._compounds("naïve_parser.ünïcode x") == ["naïve_parser.ünïcode", "x"]
    documents = [text for _, text, _ in generate(30, 40_000)]
    assert all(_lexical.compounds(d) == tokens._COMPOUND.findall(d) for d in documents)


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
@settings(max_examples=1000, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet="aAbBzZ09_$.:-/\\xX", max_size=40))
def test_the_c_expansion_is_the_python_expansion(compound: str) -> None:
    assert tokens._expand(compound) == tokens._python_expand(compound)


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
@pytest.mark.parametrize(
    "compound",
    ["", "a", "ab", "x" * MAX_TOKEN_BYTES, "x" * (MAX_TOKEN_BYTES + 1), "Ab" * MAX_TOKEN_BYTES, "a:::b", "a:b",
     "HTTPServer", "XMLHttpRequest.parseJSON2Yaml", "$scope", "__init__", "src/billing/invoice_line.py", "naïveParser"],
)  # fmt: skip
def test_the_c_expansion_of_edge_compounds(compound: str) -> None:
    assert tokens._expand(compound) == tokens._python_expand(compound)


def _letters(n: int) -> str:
    """The n-th four-letter lower-case word: a compound that is exactly one token."""
    return "".join(chr(97 + n // 26**k % 26) for k in range(4))


_CHUNK_TEXTS = [
    "",
    "x",
    "def getUserName(order_id): return crate::net::Client.of(order_id)  # 5e5 ok",
    " ".join(["loop"] * 256),  # past the positions to_tsvector keeps: None
    "value = 1e5",  # a number to the parser: None
    " ".join(_letters(n) for n in range(MAX_TOKENS + 1)),  # the cut falls on the last compound
    " ".join(_letters(n) for n in range(MAX_TOKENS)) + " x " + _letters(MAX_TOKENS),  # an empty one before it
    " ".join(f"{n:05d}" + "x" * 2000 for n in range(300)),  # cut by bytes
    # one-letter compounds give no token but count a byte each: here they take the last big word past
    # MAX_DOCUMENT_BYTES
    " ".join(_letters(n) + "q" * 2000 for n in range(255)) + " x" * 13_000 + " " + "r" * 2004,
    "x" * MAX_TOKEN_BYTES + " " + "y" * (MAX_TOKEN_BYTES + 1) + " Ab" * 900,
    "file\x1cseparator unit\x1fseparator",  # not word characters: separators between compounds
    "naïveParser größe",  # not ASCII: left to the Python form
]


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
@pytest.mark.parametrize("text", _CHUNK_TEXTS, ids=range(len(_CHUNK_TEXTS)))
def test_the_fused_c_vector_is_the_vector_of_the_tokens(text: str) -> None:
    assert tokens.code_vector(text) == tokens.python_lexical_vector(code_tokens(text))


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
def test_the_fused_c_vector_leaves_other_text_to_python_and_cuts_where_code_tokens_does() -> None:
    from palimpsest.index import _lexical

    assert _lexical.code_vector("naïveParser") is NotImplemented
    assert tokens.code_vector("naïveParser") is None  # its tokens are not ASCII: to_tsvector's to read
    cut = tokens.code_vector(" ".join(_letters(n) for n in range(MAX_TOKENS + 5)))
    assert cut is not None and int.from_bytes(cut[:4], "big") == MAX_TOKENS


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet="aAbBzZ09_$e.:-/\\ \n\t(){};#\x1c", max_size=200))
def test_any_code_gives_the_vector_of_its_tokens(text: str) -> None:
    assert tokens.code_vector(text) == tokens.python_lexical_vector(code_tokens(text))


@pytest.mark.skipif(not tokens.NATIVE, reason="palimpsest.index._lexical was not built (no C compiler)")
def test_the_fused_c_vector_of_real_code_is_the_vector_of_its_tokens() -> None:
    from palimpsest.devtools.bench.index import generate

    documents = [text for _, text, _ in generate(40, 60_000)]
    assert all(tokens.code_vector(d) == tokens.python_lexical_vector(code_tokens(d)) for d in documents)
