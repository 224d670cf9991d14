"""Any server that speaks the OpenAI chat-completions protocol: OpenAI itself, Ollama, vLLM,
llama.cpp's ``llama-server``, LM Studio, LiteLLM …

Why one class: they all accept ``POST {base_url}/chat/completions`` with
``{"model", "messages", "temperature", "max_tokens"}`` and answer
``{"choices": [{"message": {"content": "…"}}], …}``, so one small, strict client covers a laptop
model and a hosted one alike.

What is guaranteed:

* **Only :class:`~clearance.errors.ProviderError` escapes** ``complete`` for anything that goes
  wrong on the way (network, timeout, HTTP status, a reply that is not JSON or lacks
  ``choices[0].message.content``); the cause is chained (``raise … from exc``).
* **Error messages leak nothing**: they name the endpoint (without any user-info part), the
  attempt count and a short reason such as ``HTTP 503`` or ``timeout`` — never prompt text,
  never the reply body (a server may echo the prompt), never the key.
* **Bounded time.** Each attempt has a hard deadline of ``timeout_s`` for the whole exchange
  (a server trickling its reply byte by byte is cut off too); there are at most
  ``1 + max_retries`` attempts with a small capped exponential backoff between them. Retried:
  connection errors, timeouts, 429 and 5xx. Not retried: any other status (a 4xx will not get
  better), redirects (never followed, so the key never travels elsewhere), malformed replies.
* **The key** is sent only as ``Authorization: Bearer …`` and only when one is set. A client this
  class creates ignores proxy environment variables (``trust_env=False``); a client passed in is
  used as is and not closed by :meth:`close`.
* Replies are read uncompressed and capped at :attr:`OpenAICompatibleProvider.MAX_REPLY_BYTES`.
"""

from __future__ import annotations

import functools
import json
import math
import ssl
import time
from collections.abc import Callable
from typing import Any

import httpx

from clearance.errors import ConfigError, ProviderError
from clearance.lifecycle import Closing
from clearance.llm.base import ChatRequest, ChatResponse
from clearance.secrets import Secret

__all__ = ["OpenAICompatibleProvider"]


class _Retryable(Exception):
    """An attempt failed in a way that another attempt may fix."""

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context per process: building one loads the CA bundle (tens of ms),
    and a context is safe to share between clients and threads."""
    return httpx.create_ssl_context(trust_env=False)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: ignore, our own backoff applies
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


class OpenAICompatibleProvider(Closing):
    """A strict chat-completions client; see the module docstring for the guarantees.

    ``base_url`` is the API root including its version, e.g. ``http://127.0.0.1:11434/v1``.
    ``sleep`` is injectable so tests of the backoff take no time; the backoff before retry *n*
    (0-based) is ``min(max_backoff_s, backoff_s * 2**n)``, or the server's numeric
    ``Retry-After`` if that is larger, capped at ``max_backoff_s`` as well.
    """

    name = "openai"
    MAX_REPLY_BYTES = 4 << 20

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: Secret | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        client: httpx.Client | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        backoff_s: float = 0.25,
        max_backoff_s: float = 4.0,
    ) -> None:
        try:
            parsed = httpx.URL(base_url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise ConfigError(f"llm.base_url: not a valid URL: {base_url!r}") from exc
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ConfigError(
                f"llm.base_url: expected an http:// or https:// URL such as "
                f"'http://127.0.0.1:11434/v1', got {base_url!r}"
            )
        if not model.strip():
            raise ConfigError("llm.model: required for the openai provider")
        if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
            raise ConfigError(f"llm.timeout_s: must be a positive number, got {timeout_s!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigError(f"llm.max_retries: must be an integer >= 0, got {max_retries!r}")
        if api_key is not None and not isinstance(api_key, Secret):
            raise TypeError("api_key must be a clearance.secrets.Secret")
        self.base_url = str(base_url).rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        # For error messages: scheme://host:port/path, never user-info or query.
        self._endpoint = (
            str(parsed.copy_with(userinfo=b"", query=None, fragment=None)).rstrip("/")
            + "/chat/completions"
        )
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self._api_key = api_key
        self._sleep = sleep
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._timeout = httpx.Timeout(self.timeout_s)
        self._owns_client = client is None
        self._client = (
            client
            if client is not None
            else httpx.Client(trust_env=False, follow_redirects=False, verify=_ssl_context())
        )

    def __repr__(self) -> str:
        key = "Secret('****')" if self._api_key is not None else "None"
        endpoint = self._endpoint.removesuffix("/chat/completions")
        return (
            f"OpenAICompatibleProvider(base_url={endpoint!r}, model={self.model!r}, api_key={key})"
        )

    # ------------------------------------------------------------------ provider

    def complete(self, request: ChatRequest) -> ChatResponse:
        body = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        headers = {
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            "Content-Type": "application/json",
        }
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.reveal()}"
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")

        attempts = 1 + self.max_retries
        for attempt in range(attempts):
            try:
                raw = self._attempt(payload, headers, attempt + 1)
            except _Retryable as failure:
                if attempt + 1 >= attempts:
                    raise self._error(failure.reason, attempt + 1) from failure.__cause__
                delay = min(self._max_backoff_s, self._backoff_s * 2**attempt)
                if failure.retry_after_s is not None:
                    delay = min(self._max_backoff_s, max(delay, failure.retry_after_s))
                self._sleep(delay)
                continue
            return self._parse(raw, attempt + 1)
        raise AssertionError("unreachable")  # pragma: no cover

    def _error(self, reason: str, attempts: int) -> ProviderError:
        plural = "attempt" if attempts == 1 else "attempts"
        return ProviderError(
            f"LLM provider {self.name} at {self._endpoint} failed after {attempts} {plural}: {reason}"
        )

    def _attempt(self, payload: bytes, headers: dict[str, str], attempt: int) -> bytes:
        """One exchange: the raw 200 body, or ``_Retryable`` / ``ProviderError``."""
        deadline = time.monotonic() + self.timeout_s
        body = bytearray()
        try:
            with self._client.stream(
                "POST",
                self.url,
                content=payload,
                headers=headers,
                timeout=self._timeout,
                follow_redirects=False,
            ) as response:
                status = response.status_code
                if status == 429 or status >= 500:
                    raise _Retryable(
                        f"HTTP {status}", _retry_after(response.headers.get("retry-after"))
                    )
                if status != 200:
                    raise self._error(f"HTTP {status} (not retried)", attempt)
                encoding = response.headers.get("content-encoding", "identity").strip().lower()
                if encoding not in ("", "identity"):
                    raise self._error(f"unexpected content-encoding {encoding!r}", attempt)
                for chunk in response.iter_raw():
                    body += chunk
                    if time.monotonic() > deadline:
                        raise _Retryable("timeout")
                    if len(body) > self.MAX_REPLY_BYTES:
                        raise self._error("reply too large", attempt)
        except httpx.TimeoutException as exc:
            raise _Retryable("timeout") from exc
        except httpx.TransportError as exc:
            raise _Retryable(f"connection error ({type(exc).__name__})") from exc
        except (httpx.HTTPError, httpx.StreamError) as exc:
            raise self._error(f"request error ({type(exc).__name__})", attempt) from exc
        if time.monotonic() > deadline:
            raise _Retryable("timeout")
        return bytes(body)

    def _parse(self, raw: bytes, attempts: int) -> ChatResponse:
        try:
            reply: Any = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise self._error("reply is not JSON", attempts) from exc
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise self._error("reply has no choices[0].message.content", attempts) from exc
        if not isinstance(content, str):
            raise self._error("choices[0].message.content is not a string", attempts)
        model = reply.get("model")
        usage_raw = reply.get("usage")
        usage: dict[str, int] = {}
        if isinstance(usage_raw, dict):
            usage = {
                k: v
                for k, v in usage_raw.items()
                if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            }
        return ChatResponse(
            text=content,
            model=model if isinstance(model, str) and model else self.model,
            usage=usage,
        )

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client:
            self._client.close()
