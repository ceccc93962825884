"""palimpsest-index's build hook (libs/index/hatch_build.py) compiles the C lexical vector where it
can: a wheel built without a C compiler is pure Python (``auto``) or not built at all
(``require``, what the images' builder asks for), and what it compiles writes the Python bytes."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from palimpsest.index import tokens

INDEX = Path(__file__).parents[3] / "libs" / "index"


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("palimpsest_index_hatch_build", INDEX / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wheel(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    return subprocess.run(
        [*command, "--disable-pip-version-check", "-w", str(tmp_path), str(INDEX)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_without_a_compiler_the_wheel_is_pure_python_or_refused(tmp_path: Path) -> None:
    built = _wheel(tmp_path / "auto", CC="/nonexistent/cc", PALIMPSEST_NATIVE="auto")
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "auto").glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".so")]

    refused = _wheel(tmp_path / "require", CC="/nonexistent/cc", PALIMPSEST_NATIVE="require")
    assert refused.returncode != 0
    assert "no C compiler" in refused.stderr
    assert not list((tmp_path / "require").glob("*.whl"))


def test_an_unknown_mode_is_named(tmp_path: Path) -> None:
    result = _wheel(tmp_path, PALIMPSEST_NATIVE="sometimes")
    assert result.returncode != 0 and "PALIMPSEST_NATIVE must be one of auto, require, off" in result.stderr


@pytest.mark.skipif(not tokens.NATIVE, reason="no C compiler here")
def test_what_the_hook_compiles_writes_the_python_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = _hook()
    target = tmp_path / ("_lexical" + str(sysconfig.get_config_var("EXT_SUFFIX")))
    hook.compile_extension(INDEX / hook.SOURCE, target)
    spec = importlib.util.spec_from_file_location("_lexical", target)
    assert spec is not None and spec.loader is not None
    built = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(built)
    document = tokens.code_tokens("def getUserName(order_id): return crate::net::Client.of(order_id) # 5e5")
    assert built.lexical_vector(document) == tokens.python_lexical_vector(document)
    assert built.compounds("a::b x.y-z") == ["a::b", "x.y-z"]
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(hook.NativeUnavailable, match="no C compiler"):
        hook.compile_extension(INDEX / hook.SOURCE, tmp_path / "never.so")


def test_a_module_built_from_another_version_of_the_c_file_is_not_used() -> None:
    """A checkout updated without rebuilding keeps its old ``_lexical``: tokens must not call what
    it may lack (it then runs on the Python forms, ``NATIVE`` false, which the compiler test in
    test_tokens reports)."""
    stale = ModuleType("palimpsest.index._lexical")
    stale.VERSION = tokens._LEXICAL_VERSION - 1  # type: ignore[attr-defined]
    assert tokens._usable(stale) is None
    assert tokens._usable(ModuleType("no_version")) is None
    assert tokens._usable(None) is None
    if tokens.NATIVE:
        from palimpsest.index import _lexical

        assert tokens._usable(_lexical) is _lexical
