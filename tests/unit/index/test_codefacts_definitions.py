"""What a blob defines (palimpsest.index.codefacts.definitions): one table per language.

Each case is (path, source, name, kind, binding, nested); a name expected absent has kind None.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from palimpsest.index.codefacts.definitions import (
    Definitions,
    LruDefinitionsCache,
    defined_names,
    definitions,
)

PYTHON = b"""import os
from vendor import (Packed,
    Other)
MAX_REDIRECTS = 20
default_timeout = 5.0
try:
    import certifi
except ImportError:
    certifi = None


class Client:
    verify: bool = True

    def __init__(self, base_url):
        self.base_url = base_url
        scratch = 3

    def send(self, request):
        def retry():
            pass
        return os.environ.get("HTTPX_LOG_LEVEL")


def request(method, url):
    return Client(url).send(method)
"""

TYPESCRIPT = b"""import express from 'express';
const path = require('path');
export const DEFAULT_TIMEOUT = 1000;
let counter = 0;
export interface Options { baseURL: string }
export type Method = 'get' | 'post';
export function create(config: Options) {
  const local = 1;
  return { baseURL: config.baseURL, timeout: local };
}
export class Axios {
  interceptors = {};
  constructor(config: Options) { this.defaults = config; }
  request(config: Options) { return config; }
}
axios.CancelToken = CancelToken;
"""

JAVASCRIPT = TYPESCRIPT.replace(b": Options", b"").replace(
    b"export interface Options { baseURL: string }\n", b""
)
JAVASCRIPT = JAVASCRIPT.replace(b"export type Method = 'get' | 'post';\n", b"")

GO = b"""package chi

import "errors"

const MaxDepth = 5

var (
	ErrNotFound = errors.New("not found")
)

type Router interface {
	HandleFunc(pattern string)
}

type Mux struct {
	handler Handler
}

func (mx *Mux) HandleFunc(pattern string) {}

func NewRouter() *Mux {
	local := 1
	_ = local
	return nil
}
"""

RUST = b"""pub const LIMIT: usize = 3;
static NAME: &str = "x";
pub struct Value { inner: u8 }
pub enum Kind { Null, Bool(bool) }
pub trait Visitor { fn visit(&self); }
impl Value {
    pub fn as_str(&self) -> u8 { let temp = 0; temp }
}
fn free_function() {}
macro_rules! json { () => {} }
"""

JAVA = b"""package org.example;
public class Producer {
    public static final int MAX_RETRIES = 3;
    private String clientId;
    public Producer(String id) { this.clientId = id; int local = 0; }
    void send() {}
}
interface Callback { void onCompletion(); }
enum Acks { ALL, NONE }
record Pair(int left, int right) {}
"""

ELIXIR = b"""defmodule Plug.Conn do
  def send_resp(conn), do: conn
end
"""

CASES = [
    ("src/client.py", PYTHON, "MAX_REDIRECTS", "constant", True, False),
    ("src/client.py", PYTHON, "default_timeout", "assignment", True, False),
    ("src/client.py", PYTHON, "Client", "class", False, False),
    ("src/client.py", PYTHON, "verify", "field", True, True),
    ("src/client.py", PYTHON, "__init__", "method", False, True),
    ("src/client.py", PYTHON, "base_url", "attribute", True, True),
    ("src/client.py", PYTHON, "send", "method", False, True),
    ("src/client.py", PYTHON, "retry", "function", False, True),
    ("src/client.py", PYTHON, "request", "function", False, False),
    ("src/client.py", PYTHON, "scratch", None, False, False),  # a local variable
    ("src/client.py", PYTHON, "certifi", None, False, False),  # a fallback for an import
    ("src/client.py", PYTHON, "Packed", None, False, False),  # imported, not defined
    ("src/client.py", PYTHON, "HTTPX_LOG_LEVEL", None, False, False),  # read, see keys_read
    ("src/axios.ts", TYPESCRIPT, "DEFAULT_TIMEOUT", "constant", True, False),
    ("src/axios.ts", TYPESCRIPT, "counter", "assignment", True, False),
    ("src/axios.ts", TYPESCRIPT, "Options", "interface", False, False),
    ("src/axios.ts", TYPESCRIPT, "Method", "type", False, False),
    ("src/axios.ts", TYPESCRIPT, "create", "function", False, False),
    ("src/axios.ts", TYPESCRIPT, "timeout", "key", True, True),
    ("src/axios.ts", TYPESCRIPT, "Axios", "class", False, False),
    ("src/axios.ts", TYPESCRIPT, "interceptors", "field", True, True),
    ("src/axios.ts", TYPESCRIPT, "defaults", "attribute", True, True),
    ("src/axios.ts", TYPESCRIPT, "request", "method", False, True),
    ("src/axios.ts", TYPESCRIPT, "CancelToken", "attribute", True, False),
    ("src/axios.ts", TYPESCRIPT, "local", None, False, False),
    ("src/axios.ts", TYPESCRIPT, "path", None, False, False),  # require()
    ("lib/axios.js", JAVASCRIPT, "DEFAULT_TIMEOUT", "constant", True, False),
    ("lib/axios.js", JAVASCRIPT, "interceptors", "field", True, True),
    ("lib/axios.js", JAVASCRIPT, "defaults", "attribute", True, True),
    ("lib/axios.js", JAVASCRIPT, "create", "function", False, False),
    ("lib/axios.js", JAVASCRIPT, "path", None, False, False),
    ("mux.go", GO, "MaxDepth", "constant", True, False),
    ("mux.go", GO, "ErrNotFound", "assignment", True, False),
    ("mux.go", GO, "Router", "interface", False, False),
    ("mux.go", GO, "Mux", "struct", False, False),
    ("mux.go", GO, "handler", "field", True, True),
    ("mux.go", GO, "NewRouter", "function", False, False),
    ("mux.go", GO, "local", None, False, False),
    ("src/value.rs", RUST, "LIMIT", "constant", True, False),
    ("src/value.rs", RUST, "NAME", "constant", True, False),
    ("src/value.rs", RUST, "Value", "struct", False, False),
    ("src/value.rs", RUST, "inner", "field", True, True),
    ("src/value.rs", RUST, "Bool", "variant", True, True),
    ("src/value.rs", RUST, "Visitor", "trait", False, False),
    ("src/value.rs", RUST, "as_str", "method", False, True),
    ("src/value.rs", RUST, "free_function", "function", False, False),
    ("src/value.rs", RUST, "json", "macro", False, False),
    ("src/value.rs", RUST, "temp", None, False, False),
    ("Producer.java", JAVA, "Producer", "class", False, False),
    ("Producer.java", JAVA, "MAX_RETRIES", "constant", True, True),
    ("Producer.java", JAVA, "clientId", "field", True, True),
    ("Producer.java", JAVA, "send", "method", False, True),
    ("Producer.java", JAVA, "Callback", "interface", False, False),
    ("Producer.java", JAVA, "ALL", "constant", True, True),
    ("Producer.java", JAVA, "Pair", "class", False, False),
    ("Producer.java", JAVA, "local", None, False, False),
]


@pytest.mark.parametrize(("path", "source", "name", "kind", "binding", "nested"), CASES)
def test_definitions_by_language(
    path: str, source: bytes, name: str, kind: str | None, binding: bool, nested: bool
) -> None:
    found = definitions(path, source)
    assert found.method == "tree_sitter"
    named = [d for d in found.items if d.name == name]
    if kind is None:
        assert named == []
        return
    assert [(d.kind, d.binding, d.nested) for d in named][:1] == [(kind, binding, nested)]
    assert named[0].line >= 1 and source.splitlines()[named[0].line - 1].find(name.encode()) >= 0


def test_a_go_method_is_defined_outright_and_an_interface_lists_it() -> None:
    found = definitions("mux.go", GO)
    assert sorted((d.kind, d.nested) for d in found.items if d.name == "HandleFunc") == [
        ("method", False),
        ("method", True),
    ]
    assert "HandleFunc" not in found.members()  # the method declaration defines it at the top


def test_members_are_names_only_ever_nested_functions() -> None:
    found = definitions("src/client.py", PYTHON)
    assert {"send", "__init__", "retry"} <= found.members()
    assert "request" not in found.members() and "base_url" not in found.members()


def test_setting_like_quoted_keys_are_read_not_defined() -> None:
    found = definitions("src/client.py", PYTHON)
    assert found.keys_read == frozenset({"HTTPX_LOG_LEVEL"})
    assert "HTTPX_LOG_LEVEL" not in found.names()


def test_a_language_without_a_grammar_falls_back_to_the_regex() -> None:
    found = definitions("lib/plug/conn.ex", ELIXIR)
    assert found.method == "regex"
    assert {"send_resp"} <= found.names()
    assert [d.line for d in found.items] == [0] * len(found.items)  # the regex knows no lines


@pytest.mark.parametrize(
    ("path", "content"),
    [("big.py", b"x = 1\n" * 200_000), ("image.py", b"\x00\x01PNG def f(): pass")],
)
def test_binary_and_huge_blobs_are_skipped(path: str, content: bytes) -> None:
    assert definitions(path, content) == Definitions("skipped")


def test_broken_source_yields_what_the_parser_recovered() -> None:
    found = definitions("broken.py", b"def ok():\n    pass\n\ndef broken(:\n    pass\n")
    assert "ok" in found.names()


def test_defined_names_with_a_path_reads_the_grammar_without_one_the_regex() -> None:
    source = b"class Model:\n    limit = 3\n"
    assert defined_names(source, {"Model", "limit"}, path="m.py") == {"Model", "limit"}
    assert defined_names(source, {"Model", "nothing"}) == {"Model"}


def test_the_cache_is_bounded_by_the_definitions_it_holds() -> None:
    cache = LruDefinitionsCache(max_definitions=20)
    small = definitions("mux.go", GO)  # 8 definitions: weighs 9, two fit
    cache.put("a", small)
    cache.put("b", small)
    cache.put("c", small)
    assert cache.get("a") is None and cache.get("c") == small  # the oldest went first
    cache.get("b")
    cache.put("d", small)
    assert cache.get("b") == small and cache.get("c") is None  # "b" was used, "c" was not
    too_big = definitions("src/axios.ts", TYPESCRIPT * 2)
    cache.put("e", too_big)
    assert cache.get("e") is None and len(cache) == 2
    assert (cache.hits, cache.misses) == (3, 3)


def test_without_tree_sitter_every_blob_is_read_by_the_regex() -> None:
    """The ingest, embedder and recency-scanner images do not carry the ``treesitter`` extra:
    the library still imports and answers, and says it used the fallback."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["tree_sitter"] = None  # what an image without the extra has: ImportError
        import palimpsest.index.codefacts
        from palimpsest.index.codefacts.definitions import definitions
        found = definitions("src/client.py", b"def fetch(url):\\n    return url\\n")
        print(found.method, sorted(found.names()))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["regex", "['fetch']"]
