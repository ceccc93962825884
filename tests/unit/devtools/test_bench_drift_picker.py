"""The planted-drift picker's own reading of what a doc can name (apart from the check's definitions)."""

from __future__ import annotations

import pytest

from palimpsest.devtools.bench.drift import _body_variable

JS_BODY = "export default async (config) => {\n  const x = 1;\n    let responseData = await r();\n  return {data: responseData};\n}\n"


@pytest.mark.parametrize(
    ("content", "name", "body_variable"),
    [
        (JS_BODY, "responseData", True),  # only a variable of a function body: no plant
        ("const responseData = 1;\n", "responseData", False),  # a module constant
        (
            "function f() {\n  let baseURL = 1;\n}\nconst o = {\n  baseURL: 2\n};\n",
            "baseURL",
            False,
        ),  # a key too
        ("class A:\n    def f(self):\n        self.timeout = 1\n", "timeout", False),  # an attribute
        ("def handler(request):\n    return request\n", "handler", False),  # no variable at all
    ],
)
def test_a_name_only_declared_in_bodies_is_not_planted(content: str, name: str, body_variable: bool) -> None:
    assert _body_variable(content, name) is body_variable
