"""Build hook: compiles ``palimpsest.index._lexical``, the C forms of ``tokens``' hot loops (the
compound scan, the compound expansion, ``lexical_vector`` and ``code_vector``, the last two fused).

The chunker's workers spent about a fifth of a build's CPU on that per-token work; the C forms give
exactly what the Python forms give, several times faster. ``PALIMPSEST_NATIVE``:

* ``auto`` (the default): built where a C compiler and Python's headers are found; elsewhere the
  package stays pure Python and ``tokens`` uses its Python implementation (same bytes, slower);
* ``require``: a build that cannot compile it fails (the images' builder sets this);
* ``off``: not built.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("src/palimpsest/index/_lexical.c")
MODES = ("auto", "require", "off")


class NativeUnavailable(RuntimeError):
    """No C compiler, no Python headers, or the compiler failed."""


def compile_extension(source: Path, target: Path) -> None:
    """Compile ``source`` into the extension module ``target`` with the C compiler Python names."""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    if not cc or shutil.which(cc[0]) is None:
        raise NativeUnavailable(f"no C compiler ({cc[0] if cc else 'cc'} is not on PATH)")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        raise NativeUnavailable(f"no Python headers in {include}")
    partial = target.with_name(target.name + ".tmp")
    command = [
        *cc,
        "-O2",
        "-fPIC",
        "-shared",
        "-std=c11",
        "-Wall",
        f"-I{include}",
        str(source),
        "-o",
        str(partial),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise NativeUnavailable(f"{cc[0]} failed: {done.stderr.strip()[-2000:]}")
    partial.replace(target)


class NativeBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        mode = os.environ.get("PALIMPSEST_NATIVE", "auto")
        if mode not in MODES:
            raise ValueError(f"PALIMPSEST_NATIVE must be one of {', '.join(MODES)}, not {mode!r}")
        if self.target_name != "wheel" or mode == "off":
            return
        root = Path(self.root)
        target = (root / SOURCE).with_name("_lexical" + str(sysconfig.get_config_var("EXT_SUFFIX")))
        try:
            compile_extension(root / SOURCE, target)
        except NativeUnavailable as exc:
            if mode == "require":
                raise
            self.app.display_warning(
                f"palimpsest-index: the C lexical vector is not built ({exc}); the Python one is used"
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        build_data["artifacts"].append(str(target.relative_to(root)))
