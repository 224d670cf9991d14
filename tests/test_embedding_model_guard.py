"""An index built with one embedding model is never searched or extended with another."""

from __future__ import annotations

import pytest

from clearance.app import Clearance
from clearance.errors import EmbeddingError


def test_a_different_model_than_the_index_was_built_with_is_refused(settings_factory):
    settings = settings_factory({"embedding": {"provider": "minilm"}})
    with Clearance.open(settings) as app:
        assert app.embedder is not None  # an empty index records the model it is built with
        assert app.store.get_meta("embedding_model") == app.embedder.name
        app.store.set_meta("embedding_model", "some-other-model")
    with Clearance.open(settings) as app, pytest.raises(EmbeddingError, match="some-other-model"):
        _ = app.embedder


def test_lexical_only_configuration_needs_no_model_check(settings_factory):
    settings = settings_factory({"embedding": {"provider": "none"}})
    with Clearance.open(settings) as app:
        assert app.embedder is None
        assert app.store.get_meta("embedding_model") is None
