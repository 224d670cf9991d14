"""``[embedding] device``: the CPU by default, a GPU where asked for and usable, never a silent
fall back to the CPU when a GPU was asked for; ``clearance status`` says which.

This machine (and CI) has onnxruntime's CPU build and no GPU, so the GPU cases run the real
onnxruntime with the provider list a GPU build would report: asked for a GPU it cannot
start, onnxruntime itself falls back to the CPU, which is what the embedder must refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clearance import Clearance
from clearance.config import EmbeddingSettings
from clearance.errors import ConfigError, EmbeddingError
from clearance.llm.embedding import MiniLMEmbedder, execution_providers

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"


def test_the_cpu_is_the_default() -> None:
    assert EmbeddingSettings().device == "cpu"
    assert execution_providers("cpu", [CUDA, CPU]) == [CPU]


def test_auto_takes_a_gpu_where_onnxruntime_offers_one() -> None:
    assert execution_providers("auto", [CUDA, CPU]) == [CUDA, CPU]
    assert execution_providers("auto", ["ROCMExecutionProvider", CPU])[0] == "ROCMExecutionProvider"
    assert execution_providers("auto", [CPU]) == [CPU]


def test_gpu_without_a_gpu_build_is_an_error_saying_what_to_install() -> None:
    assert execution_providers("gpu", ["TensorrtExecutionProvider", CUDA, CPU]) == [CUDA, CPU]
    with pytest.raises(EmbeddingError, match="onnxruntime-gpu") as caught:
        execution_providers("gpu", [CPU])
    assert 'device = "gpu"' in str(caught.value)


def test_an_unknown_device_is_refused() -> None:
    with pytest.raises(EmbeddingError, match=r"embedding\.device"):
        MiniLMEmbedder(device="tpu")


@pytest.mark.embeddings
def test_asked_for_a_gpu_on_this_machine_the_model_refuses_to_load() -> None:
    with pytest.raises(EmbeddingError, match="no GPU provider"):
        MiniLMEmbedder(device="gpu").load()


@pytest.mark.embeddings
def test_auto_runs_on_the_cpu_here_and_says_so() -> None:
    embedder = MiniLMEmbedder(device="auto")
    assert embedder.execution_provider is None
    vectors = embedder.embed(["annual leave carries over"])
    assert vectors.shape == (1, 384)
    assert embedder.execution_provider == CPU


@pytest.mark.embeddings
def test_a_gpu_provider_that_cannot_start_is_an_error_not_a_slow_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """onnxruntime-gpu reports CUDA, but the session starts on the CPU (no driver; the GPU
    build then logs and falls back, which the CPU build here is made to do): the embedder
    refuses rather than run on the CPU unannounced. Reverse proof: ``auto``, which may fall
    back, loads."""
    import onnxruntime as ort

    session = ort.InferenceSession
    asked: list[list[str]] = []

    def gpu_build_without_a_driver(path: str, **kwargs: Any) -> Any:
        asked.append(list(kwargs["providers"]))
        return session(path, sess_options=kwargs.get("sess_options"), providers=[CPU])

    monkeypatch.setattr(ort, "get_available_providers", lambda: [CUDA, CPU])
    monkeypatch.setattr(ort, "InferenceSession", gpu_build_without_a_driver)
    with pytest.raises(EmbeddingError, match="could not start"):
        MiniLMEmbedder(device="gpu").load()
    auto = MiniLMEmbedder(device="auto")
    auto.load()
    assert auto.execution_provider == CPU
    assert asked == [[CUDA, CPU], [CUDA, CPU]]  # both asked onnxruntime for the GPU first


def test_status_reports_the_device_without_loading_the_model(
    tmp_path: Path,
    settings_factory: Callable[..., Any],
    store: Any,
) -> None:
    app = Clearance(
        settings_factory({"embedding": {"provider": "minilm", "device": "auto"}}), store
    )
    embedding = app.status()["embedding"]
    assert embedding == {
        "provider": "minilm",
        "device": "auto",
        "gpu_runtime": None,  # the CPU build is what is installed here
        "running_on": None,  # not loaded by this process
    }


@pytest.mark.embeddings
def test_status_reports_where_the_loaded_model_runs(
    settings_factory: Callable[..., Any], store: Any
) -> None:
    app = Clearance(settings_factory({"embedding": {"provider": "minilm"}}), store)
    assert app.embedder is not None
    app.embedder.embed(["x"])
    assert app.status()["embedding"]["running_on"] == CPU


def test_the_setting_is_checked_naming_the_key(settings_factory: Callable[..., Any]) -> None:
    with pytest.raises(ConfigError, match=r"embedding\.device"):
        settings_factory({"embedding": {"device": "tpu"}})
