"""litellm, imported lazily, in a worker thread (it takes seconds), with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` set first: otherwise it downloads a price list at import.
Processes that never call a model never import it."""

from __future__ import annotations

import asyncio
import importlib
import os
import threading
import warnings
from types import ModuleType

_litellm: ModuleType | None = None
_import_lock = threading.Lock()

# litellm builds some pydantic schemas on first use; pydantic warns about their TypedDicts.
# Harmless third-party noise, silenced by message only (other warnings still surface).
_NOISE = (r".*`ReadOnly` qualifier",)


def quiet() -> None:
    for message in _NOISE:
        warnings.filterwarnings("ignore", message=message, category=UserWarning)


def _import_litellm() -> ModuleType:
    global _litellm
    with _import_lock:
        if _litellm is None:
            # without this, importing litellm downloads a model price list from the internet
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module("litellm")
            # no "Give Feedback / Get Help" banners on errors, no telemetry, no debug prints
            for name, value in (("suppress_debug_info", True), ("telemetry", False), ("set_verbose", False)):
                setattr(module, name, value)
            _litellm = module
        return _litellm


async def load_litellm() -> ModuleType:
    """The litellm module, imported once per process in a worker thread (the import is slow)."""
    if _litellm is not None:
        return _litellm
    return await asyncio.to_thread(_import_litellm)


def loaded_litellm() -> ModuleType | None:
    """The litellm module if this process imported it already, else None (nothing is imported)."""
    return _litellm
