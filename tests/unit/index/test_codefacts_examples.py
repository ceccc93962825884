"""What a document's own examples define: one answer for the doc check and the left-behind check."""

from __future__ import annotations

import pytest

from palimpsest.index.codefacts.examples import example_defines

GO_STRUCT = '```go\ntype Booking struct {\n\tCheckIn  time.Time `form:"in"`\n}\n```\n'
JS_OPTIONS = "```js\nconst client = axios.create({\n  withCredentials: false,\n  timeout: 1000,\n})\n```\n"
RST = "Example::\n\n    def show_page(x):\n        return x\n"


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
