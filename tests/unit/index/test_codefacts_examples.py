"""What a document's own examples define: one answer for the doc check and the left-behind check."""

from __future__ import annotations

import pytest

from palimpsest.index.codefacts.examples import example_containers, example_defines

GO_STRUCT = '```go\ntype Booking struct {\n\tCheckIn  time.Time `form:"in"`\n}\n```\n'
JS_OPTIONS = "```js\nconst client = axios.create({\n  withCredentials: false,\n  timeout: 1000,\n})\n```\n"
RST = "Example::\n\n    def show_page(x):\n        return x\n"


def test_the_members_of_a_type_the_repository_defines_are_its_listing() -> None:
    """``type Router interface { HandleFunc(…) }`` in chi's README lists chi's own Router: its
    methods are claims about the code; the example's own struct (``Booking``) stays its own."""
    listing = "```go\ntype Router interface {\n\tHandleFunc(pattern string, h http.HandlerFunc)\n}\n```\n"
    assert example_containers(listing + GO_STRUCT) == {"Router", "Booking"}
    assert example_defines(listing, "HandleFunc")
    assert not example_defines(listing, "HandleFunc", {"Router", "Mux"})
    assert example_defines(GO_STRUCT, "CheckIn", {"Router", "Mux"})


@pytest.mark.parametrize(
    ("text", "name", "defined"),
    [
        (GO_STRUCT, "CheckIn", True),  # a field of the example's own struct, read as Go
        (GO_STRUCT, "Booking", True),
        (JS_OPTIONS, "client", True),  # a variable the example declares
        (JS_OPTIONS, "withCredentials", False),  # an option it passes: the API's key, not its own
        (JS_OPTIONS, "timeout", False),
        (RST, "show_page", True),  # an indented reStructuredText block: the keyword regex
        ("```python\ndef show_page(x): ...\n```\n", "show_page", False),  # a listed signature
        ("```rust\nlet mut header_map = HeaderMap::new();\n```\n", "header_map", True),
        ("Call `send()` on the client.\n", "send", False),  # prose defines nothing
        ("```\ndef show(x)\n  x\nend\n```\n", "show", True),  # a fence of no parsed language: the regex
    ],
)
def test_a_docs_own_examples(text: str, name: str, defined: bool) -> None:
    assert example_defines(text, name) is defined
