"""Provider names → factories, and the one place a provider is built from settings.

Why a registry: ``[llm] provider = "…"`` names a provider; the built-ins (``extractive``,
``mock``, ``openai``) and any added later (a plugin, a test double) are found the same way —
each registers a factory with :func:`register_provider`, as the built-ins below do, in the
spirit of simonw/llm's plugin hooks.

Factory calling convention::

    factory(settings: LLMSettings, *, api_key: Secret | None) -> Provider

What is guaranteed:

* an unknown name is a :class:`~clearance.errors.ConfigError` naming the key and every known
  provider: ``llm.provider: unknown provider 'x' (extractive, mock, openai)``;
* the API key is read from the environment variable named by ``api_key_env`` — through the
  ``env`` mapping, ``os.environ`` by default — once, at construction, and is only ever held as a
  :class:`~clearance.secrets.Secret`; a variable that is named but unset is a ``ConfigError``
  naming the variable, never a value;
* whatever a factory returns must satisfy the :class:`~clearance.llm.base.Provider` protocol.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping

from clearance.config import LLMSettings, RerankSettings
from clearance.errors import ConfigError
from clearance.llm.base import Provider, ProviderFactory
from clearance.llm.extractive import ExtractiveProvider
from clearance.llm.mock import MockProvider
from clearance.llm.openai import OpenAICompatibleProvider
from clearance.secrets import Secret, secret_from_env

__all__ = [
    "Secret",
    "available_providers",
    "make_provider",
    "make_rerank_provider",
    "register_provider",
    "unregister_provider",
]

_lock = threading.Lock()
_factories: dict[str, ProviderFactory] = {}


def _normalise(name: str) -> str:
    return name.strip().lower()


def register_provider(name: str, factory: ProviderFactory, *, replace: bool = False) -> None:
    """Make ``[llm] provider = name`` build providers with ``factory``.

    Names are case-insensitive. Registering a taken name is a ``ValueError`` unless
    ``replace=True``, so two plugins cannot silently shadow each other (or a built-in).
    """
    key = _normalise(name)
    if not key or not key.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"bad provider name {name!r}: use letters, digits, '-' or '_'")
    if not callable(factory):
        raise TypeError(f"provider factory for {name!r} is not callable")
    with _lock:
        if key in _factories and not replace:
            raise ValueError(f"provider {key!r} is already registered")
        _factories[key] = factory


def unregister_provider(name: str) -> None:
    """Forget a registered provider (tests use this to clean up). Unknown names are ignored."""
    with _lock:
        _factories.pop(_normalise(name), None)


def available_providers() -> tuple[str, ...]:
    """Every registered provider name, sorted."""
    with _lock:
        return tuple(sorted(_factories))


def make_provider(settings: LLMSettings, *, env: Mapping[str, str] | None = None) -> Provider:
    """Build the provider ``settings.provider`` names. See the module docstring."""
    key = _normalise(settings.provider)
    with _lock:
        factory = _factories.get(key)
        known = ", ".join(sorted(_factories))
    if factory is None:
        raise ConfigError(f"llm.provider: unknown provider {settings.provider!r} ({known})")
    api_key = secret_from_env(settings.api_key_env, os.environ if env is None else env)
    provider = factory(settings, api_key=api_key)
    if not isinstance(provider, Provider):
        raise ConfigError(
            f"llm.provider: the factory for {key!r} returned {type(provider).__name__}, "
            "which is not a Provider"
        )
    return provider


def make_rerank_provider(
    llm: LLMSettings, rerank: RerankSettings, *, env: Mapping[str, str] | None = None
) -> Provider | None:
    """The listwise judge: ``None`` when ``[rerank] provider = "none"`` (keep fused order),
    the ``[llm]`` provider's kind when it is ``""`` — unless that is the extractive
    provider, whose "judgement" counts the question's words in each snippet with no regard
    for how rare they are and would undo the fused BM25 and vector order (``None`` then;
    name it explicitly to have it anyway) — else the named provider with the other ``[llm]``
    settings (URL, model, key, timeouts). Errors name ``rerank.provider``."""
    name = _normalise(rerank.provider)
    if name == "none":
        return None
    if not name:
        if _normalise(llm.provider) == "extractive":
            return None
        return make_provider(llm, env=env)
    try:
        return make_provider(dataclasses.replace(llm, provider=name), env=env)
    except ConfigError as exc:
        if exc.message.startswith("llm.provider:"):
            raise ConfigError("rerank.provider:" + exc.message[len("llm.provider:") :]) from None
        raise


# --------------------------------------------------------------------------- built-ins


def _mock_factory(settings: LLMSettings, *, api_key: Secret | None = None) -> Provider:
    return MockProvider()


def _extractive_factory(settings: LLMSettings, *, api_key: Secret | None = None) -> Provider:
    return ExtractiveProvider()


def _openai_factory(settings: LLMSettings, *, api_key: Secret | None = None) -> Provider:
    if not settings.base_url:
        raise ConfigError(
            "llm.base_url: required for the openai provider, e.g. 'http://127.0.0.1:11434/v1'"
        )
    return OpenAICompatibleProvider(
        base_url=settings.base_url,
        model=settings.model,
        api_key=api_key,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
    )


register_provider("extractive", _extractive_factory)
register_provider("mock", _mock_factory)
register_provider("openai", _openai_factory)
