"""LLM providers behind one protocol: registry, Secret, mock, extractive, OpenAI-compatible.

The HTTP provider is tested against a real chat-completions server on loopback
(``chat_server.py``), so retries, timeouts, refused connections and the headers that really left
the process are the real thing. Canary strings stand for prompt text and the API key: no error
message may contain either (docs/design.md §8: logs that do not leak twice).
"""

from __future__ import annotations

import copy
import json
import pickle
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearance.config import LLMSettings, RerankSettings
from clearance.errors import ConfigError, ProviderError
from clearance.llm.base import ChatMessage, ChatRequest, ChatResponse, Provider, Snippet
from clearance.llm.extractive import ExtractiveProvider, is_line_unit, split_sentences
from clearance.llm.mock import MockProvider, ScriptExhausted
from clearance.llm.openai import OpenAICompatibleProvider
from clearance.llm.registry import (
    available_providers,
    make_provider,
    make_rerank_provider,
    register_provider,
    unregister_provider,
)
from clearance.model import Sensitivity
from clearance.secrets import Secret, secret_from_env

from .chat_server import ChatServer, Reply, closed_base_url

KEY = "sk-canary-KEY-5e1f0c9a7b"
CANARY = "CANARY-PROMPT-TEXT-d41d8cd9"
KEY_ENV = "CLEARANCE_TEST_LLM_KEY"


# --------------------------------------------------------------------------- helpers


def snip(ref: str, text: str) -> Snippet:
    return Snippet(
        ref=ref,
        chunk_id=f"chunk-{ref}",
        doc_id=f"files:{ref}",
        title=f"Doc {ref}",
        locator="page=1",
        uri=f"file:///docs/{ref}.md",
        text=text,
        sensitivity=Sensitivity.INTERNAL,
        corpus="ops",
        origin="human",
        trust="trusted",
    )


def request(
    question: str, *texts: str, purpose: str = "answer", max_tokens: int = 512
) -> ChatRequest:
    snippets = tuple(snip(f"S{i}", t) for i, t in enumerate(texts, start=1))
    body = "\n".join(f"[{s.ref}] {s.text}" for s in snippets)
    return ChatRequest(
        purpose="rerank" if purpose == "rerank" else "answer",
        question=question,
        messages=(
            ChatMessage("system", "Answer only from the sources; cite them as [S1]."),
            ChatMessage("user", f"Sources:\n{body}\n\nQuestion: {question}"),
        ),
        snippets=snippets,
        max_tokens=max_tokens,
    )


def canary_request() -> ChatRequest:
    return request(f"What is {CANARY}?", f"The secret project is {CANARY}.")


class Sleeps:
    """An injectable ``sleep`` that records the backoff instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(answer="Employees fly economy. [S1]") as s:
        yield s


def provider_for(
    server_or_url: ChatServer | str, *, sleeps: Sleeps | None = None, **kwargs: Any
) -> OpenAICompatibleProvider:
    base = server_or_url if isinstance(server_or_url, str) else server_or_url.base_url
    kwargs.setdefault("timeout_s", 2.0)
    kwargs.setdefault("max_retries", 2)
    return OpenAICompatibleProvider(base, "test-model", sleep=sleeps or Sleeps(), **kwargs)


def error_chain_text(exc: BaseException) -> str:
    """``str`` and ``repr`` of an exception and everything it was raised from."""
    parts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None:
        parts += [str(seen), repr(seen)]
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


# --------------------------------------------------------------------------- Secret


def test_secret_never_prints_its_value() -> None:
    secret = Secret(KEY)
    for text in (repr(secret), str(secret), f"{secret}", f"{secret!r}", format(secret)):
        assert text == "Secret('****')"
        assert KEY not in text
    assert KEY not in repr([secret, {"k": secret}])
    assert secret.reveal() == KEY


def test_secret_refuses_pickling_and_json() -> None:
    secret = Secret(KEY)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(secret, protocol=protocol)
    with pytest.raises(TypeError):
        json.dumps({"key": secret})
    assert KEY not in json.dumps({"key": secret}, default=str)


def test_secret_is_immutable_and_copies_to_itself() -> None:
    secret = Secret(KEY)
    with pytest.raises(AttributeError):
        secret._value = "other"
    with pytest.raises(AttributeError):
        secret.extra = 1
    assert copy.copy(secret) is secret
    assert copy.deepcopy({"k": secret})["k"] is secret
    with pytest.raises(ValueError):
        Secret("")


def test_secret_from_env() -> None:
    assert secret_from_env("", {}) is None
    secret = secret_from_env(KEY_ENV, {KEY_ENV: KEY})
    assert secret is not None
    assert secret.reveal() == KEY
    with pytest.raises(ConfigError, match=rf"llm\.api_key_env: .*{KEY_ENV}"):
        secret_from_env(KEY_ENV, {})
    with pytest.raises(ConfigError):
        secret_from_env(KEY_ENV, {KEY_ENV: "  "})


# --------------------------------------------------------------------------- registry


def test_builtins_are_registered_and_built() -> None:
    assert {"extractive", "mock", "openai"} <= set(available_providers())
    assert isinstance(make_provider(LLMSettings()), ExtractiveProvider)  # the embedded default
    mock = make_provider(LLMSettings(provider="mock"))
    assert isinstance(mock, MockProvider)
    assert isinstance(mock, Provider)
    assert isinstance(make_provider(LLMSettings(provider=" Extractive ")), ExtractiveProvider)


def test_unknown_provider_names_the_key_and_the_choices() -> None:
    with pytest.raises(ConfigError) as info:
        make_provider(LLMSettings(provider="x"))
    assert info.value.message == "llm.provider: unknown provider 'x' (extractive, mock, openai)"


def test_register_a_provider_through_the_same_mechanism() -> None:
    seen: list[tuple[LLMSettings, Secret | None]] = []

    def factory(settings: LLMSettings, *, api_key: Secret | None = None) -> Provider:
        seen.append((settings, api_key))
        return MockProvider("custom [S1]")

    register_provider("custom-test", factory)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_provider("custom-test", factory)
        with pytest.raises(ValueError, match="already registered"):
            register_provider("openai", factory)  # a built-in cannot be shadowed by accident
        settings = LLMSettings(provider="custom-test", api_key_env=KEY_ENV)
        provider = make_provider(settings, env={KEY_ENV: KEY})
        assert provider.complete(request("q")).text == "custom [S1]"
        assert seen[0][0] is settings
        assert isinstance(seen[0][1], Secret)
        assert seen[0][1].reveal() == KEY
        register_provider("custom-test", lambda s, **kw: MockProvider("v2"), replace=True)
        assert (
            make_provider(LLMSettings(provider="custom-test")).complete(request("q")).text == "v2"
        )
    finally:
        unregister_provider("custom-test")
    assert "custom-test" not in available_providers()
    with pytest.raises(ValueError, match="bad provider name"):
        register_provider("no spaces", factory)


def test_a_factory_must_return_a_provider() -> None:
    def broken(settings: LLMSettings, **kw: Any) -> Any:
        return object()

    register_provider("broken-test", broken)
    try:
        with pytest.raises(ConfigError, match="not a Provider"):
            make_provider(LLMSettings(provider="broken-test"))
    finally:
        unregister_provider("broken-test")


def test_openai_settings_are_validated_with_key_names() -> None:
    with pytest.raises(ConfigError, match=r"^llm\.base_url: required"):
        make_provider(LLMSettings(provider="openai", model="m"))
    with pytest.raises(ConfigError, match=r"^llm\.base_url: expected an http"):
        make_provider(LLMSettings(provider="openai", base_url="ftp://x/v1", model="m"))
    with pytest.raises(ConfigError, match=r"^llm\.model: required"):
        make_provider(LLMSettings(provider="openai", base_url="http://127.0.0.1:1/v1"))
    with pytest.raises(ConfigError, match=r"^llm\.timeout_s"):
        OpenAICompatibleProvider("http://127.0.0.1:1/v1", "m", timeout_s=0)
    with pytest.raises(ConfigError, match=r"^llm\.max_retries"):
        OpenAICompatibleProvider("http://127.0.0.1:1/v1", "m", max_retries=-1)


def test_named_but_missing_key_variable_is_a_config_error() -> None:
    settings = LLMSettings(
        provider="openai", base_url="http://127.0.0.1:1/v1", model="m", api_key_env=KEY_ENV
    )
    with pytest.raises(ConfigError, match=KEY_ENV) as info:
        make_provider(settings, env={"OTHER": KEY})
    assert KEY not in error_chain_text(info.value)


def test_key_is_read_at_construction_and_sent_only_as_bearer(server: ChatServer) -> None:
    env = {KEY_ENV: KEY}
    settings = LLMSettings(
        provider="openai", base_url=server.base_url, model="m", api_key_env=KEY_ENV
    )
    provider = make_provider(settings, env=env)
    assert isinstance(provider, OpenAICompatibleProvider)
    with provider:
        env[KEY_ENV] = "changed-later"  # read once, at construction
        assert KEY not in repr(provider)
        assert KEY not in repr(vars(provider) if hasattr(provider, "__dict__") else provider)
        provider.complete(canary_request())
    recorded = server.requests[0]
    assert recorded.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in recorded.body.decode()
    assert KEY not in recorded.path


def test_key_from_process_environment_by_default(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    settings = LLMSettings(
        provider="openai", base_url=server.base_url, model="m", api_key_env=KEY_ENV
    )
    provider = make_provider(settings)
    assert isinstance(provider, OpenAICompatibleProvider)
    with provider:
        provider.complete(request("q"))
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_no_key_no_authorization_header(server: ChatServer) -> None:
    with provider_for(server) as provider:
        provider.complete(request("q"))
    assert "authorization" not in server.requests[0].headers


def test_rerank_provider_selection() -> None:
    llm = LLMSettings(provider="mock")
    assert make_rerank_provider(llm, RerankSettings(provider="none")) is None
    assert isinstance(make_rerank_provider(llm, RerankSettings()), MockProvider)
    # The extractive provider judges only when named: by default its word counts stay out.
    assert make_rerank_provider(LLMSettings(), RerankSettings()) is None
    same = make_rerank_provider(LLMSettings(), RerankSettings(provider="extractive"))
    assert isinstance(same, ExtractiveProvider)
    with pytest.raises(ConfigError, match=r"^rerank\.provider: unknown provider 'nope'"):
        make_rerank_provider(llm, RerankSettings(provider="nope"))


# --------------------------------------------------------------------------- mock


def test_mock_default_answer_cites_first_sentence_of_s1() -> None:
    mock = MockProvider()
    req = request("q", "Employees fly economy. Always.", "Other text.")
    response = mock.complete(req)
    assert response == ChatResponse(text="Employees fly economy. [S1]", model="mock")
    assert mock.complete(request("q")).text == ""
    rerank = request("q", "a", "b", "c", purpose="rerank")
    assert mock.complete(rerank).text == "S1 > S2 > S3"
    assert mock.requests == [req, request("q"), rerank]
    assert mock.calls == 3


def test_mock_fixed_string_and_callable() -> None:
    assert MockProvider("fixed [S2]").complete(request("q")).text == "fixed [S2]"
    echo = MockProvider(lambda r: f"{r.purpose}:{r.question}")
    assert echo.complete(request("why")).text == "answer:why"


def test_mock_list_is_consumed_in_order_then_exhausts_loudly() -> None:
    outage = ProviderError("scripted outage")
    mock = MockProvider(["one [S1]", outage, "three [S1]"])
    assert mock.complete(request("q")).text == "one [S1]"
    with pytest.raises(ProviderError) as info:
        mock.complete(request("q"))
    assert info.value is outage
    assert mock.complete(request("q")).text == "three [S1]"
    with pytest.raises(ScriptExhausted):
        mock.complete(request("q"))
    assert not issubclass(ScriptExhausted, ProviderError)  # a test bug never looks like an outage
    assert mock.calls == 4


def test_mock_simulated_outage_records_and_recovers() -> None:
    mock = MockProvider(["ok [S1]"], fail="down")
    with pytest.raises(ProviderError, match="down"):
        mock.complete(request("q"))
    assert mock.calls == 1  # recorded although it failed
    mock.recover()
    assert mock.complete(request("q")).text == "ok [S1]"  # the outage consumed no reply
    mock.fail()
    with pytest.raises(ProviderError):
        mock.complete(request("q"))


def test_mock_callable_may_raise_provider_error() -> None:
    def script(r: ChatRequest) -> str:
        raise ProviderError("boom")

    with pytest.raises(ProviderError, match="boom"):
        MockProvider(script).complete(request("q"))


# --------------------------------------------------------------------------- extractive


POLICY = (
    "Travel policy applies to all staff. Employees fly economy on flights under 6 hours. "
    "Flights over 6 hours may be booked in business class."
)


def test_extractive_quotes_the_matching_sentence_with_its_marker() -> None:
    provider = ExtractiveProvider()
    req = request("Do employees fly economy on short flights?", POLICY, "Catering is provided.")
    response = provider.complete(req)
    assert response.text.startswith("Employees fly economy on flights under 6 hours. [S1]")
    assert "Catering" not in response.text
    assert response.model == "extractive"


def test_extractive_prefers_higher_score_then_snippet_order() -> None:
    provider = ExtractiveProvider()
    req = request(
        "expense report deadline",
        "The deadline is strict.",  # 1 term
        "Submit the expense report before the deadline.",  # 3 terms
        "Every deadline matters.",  # 1 term, later snippet
    )
    assert provider.complete(req).text == "Submit the expense report before the deadline. [S2]"
    tie = request("parking", "Parking is free.", "Parking is on level 2.")
    assert provider.complete(tie).text == "Parking is free. [S1] Parking is on level 2. [S2]"


def test_extractive_caps_at_three_sentences_and_dedupes_overlap() -> None:
    text = (
        "Badge access rules. Badge access at night. Badge access on weekends. Badge access hours."
    )
    req = request("badge access", text, "Badge access rules.")  # overlapping chunk repeats text
    quotes = ExtractiveProvider().quotes(req)
    assert [q.sentence for q in quotes] == [
        "Badge access rules.",
        "Badge access at night.",
        "Badge access on weekends.",
    ]
    assert all(q.ref == "S1" for q in quotes)
    assert len(ExtractiveProvider(max_sentences=1).quotes(req)) == 1


def test_extractive_japanese() -> None:
    text = "出張は原則としてエコノミークラスを利用する。長距離の国際線ではビジネスクラスを利用できる。経費精算は月末までに行う。"
    req = request("ビジネスクラスは使えますか", "社員食堂は12時に開く。", text)
    assert ExtractiveProvider().complete(req).text == (
        "長距離の国際線ではビジネスクラスを利用できる。 [S2]"
    )


def test_extractive_is_empty_when_nothing_matches() -> None:
    provider = ExtractiveProvider()
    assert provider.complete(request("quarterly revenue", POLICY)).text == ""
    assert provider.complete(request("economy")).text == ""  # no snippets
    assert provider.complete(request("what is the", POLICY)).text == ""  # only stopwords


def test_extractive_never_quotes_a_sentence_carrying_a_marker() -> None:
    hostile = "Economy class is banned [S2]. Economy class is standard."
    text = ExtractiveProvider().complete(request("economy class", hostile, "x")).text
    assert text == "Economy class is standard. [S1]"


def test_extractive_rerank_orders_by_overlap_stably() -> None:
    req = request(
        "expense report deadline",
        "Nothing relevant here.",
        "Expense report deadline is Friday.",
        "Unrelated too.",
        "The report is due.",
        purpose="rerank",
    )
    assert ExtractiveProvider().complete(req).text == "S2 > S4 > S1 > S3"
    assert ExtractiveProvider().complete(request("x", purpose="rerank")).text == ""


def test_split_sentences_keeps_abbreviations_and_decimals() -> None:
    text = (
        'Flights over 6.5 hours, e.g. to the U.S. are long. Ask Dr. Lee! Why? "Fine." Next\n- item'
    )
    assert split_sentences(text) == [
        "Flights over 6.5 hours, e.g. to the U.S. are long.",
        "Ask Dr. Lee!",
        "Why?",
        '"Fine."',
        "Next",
        "- item",
    ]
    assert split_sentences("一つ目。二つ目！三つ目？") == ["一つ目。", "二つ目！", "三つ目？"]
    assert split_sentences("  \n ") == []


def test_a_year_opening_a_wrapped_line_is_no_list_number() -> None:
    """A PDF's hard wrap before "2020." kept the year out of the sentence it ends."""
    text = "Send comments by September 21,\n2020. ADDRESSES: by mail.\n1. Online.\n2. By fax."
    assert split_sentences(text) == [
        "Send comments by September 21,\n2020.",
        "ADDRESSES: by mail.",
        "1. Online.",
        "2. By fax.",
    ]


def test_etc_ends_a_sentence_only_before_a_capital() -> None:
    assert split_sentences("Old versions break the libraries etc. we use. Upgrade.") == [
        "Old versions break the libraries etc. we use.",
        "Upgrade.",
    ]
    assert split_sentences("We keep logs, traces etc. Then we delete them.") == [
        "We keep logs, traces etc.",
        "Then we delete them.",
    ]


WORDS = ["economy", "flight", "hours", "badge", "出張", "経費", "精算", "6", "2024", "Dr", "e"]
PUNCT = [" ", ". ", "。", "! ", "? ", "\n", ", ", " [S1] ", ".", "「", "」"]
sentence_text = st.lists(st.sampled_from(WORDS + PUNCT), max_size=40).map("".join)


def parse_answer(text: str) -> list[tuple[str, str]]:
    """``"a [S1] b [S2]"`` → ``[("a", "S1"), ("b", "S2")]``; asserts the exact shape (list
    items and table lines are on lines of their own)."""
    if not text:
        return []
    parts = re.split(r" \[(S\d+)\](?:\s|$)", text)
    assert parts[-1] == "", text
    return list(zip(parts[0:-1:2], parts[1:-1:2], strict=True))


@settings(max_examples=200, deadline=None)
@given(
    question=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    texts=st.lists(sentence_text, max_size=5),
)
def test_extractive_never_invents_text(question: str, texts: list[str]) -> None:
    req = request(question, *texts)
    by_ref = {s.ref: s.text for s in req.snippets}
    output = ExtractiveProvider().complete(req).text
    quoted = parse_answer(output)
    assert len([s for s, _ in quoted if not is_line_unit(s)]) <= 3
    for sentence, ref in quoted:
        assert sentence, output
        assert sentence in by_ref[ref], (sentence, by_ref[ref])
    rerank = ExtractiveProvider().complete(request(question, *texts, purpose="rerank")).text
    assert sorted(rerank.split(" > ") if rerank else []) == sorted(by_ref)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_split_sentences_is_verbatim_and_ordered(text: str) -> None:
    position = 0
    for sentence in split_sentences(text):
        assert sentence and sentence == sentence.strip()
        found = text.find(sentence, position)
        assert found >= 0
        position = found + len(sentence)


# --------------------------------------------------------------------------- openai: success


def test_openai_success_sends_the_protocol_body(server: ChatServer) -> None:
    req = request("Economy?", POLICY, max_tokens=64)
    with provider_for(server) as provider:
        response = provider.complete(req)
    assert response.text == "Employees fly economy. [S1]"
    assert response.model == "loopback-model"
    assert response.usage == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    (recorded,) = server.requests
    assert recorded.method == "POST"
    assert recorded.path == "/v1/chat/completions"
    assert recorded.headers["content-type"] == "application/json"
    assert recorded.json == {
        "model": "test-model",
        "messages": [{"role": m.role, "content": m.content} for m in req.messages],
        "temperature": 0.0,
        "max_tokens": 64,
    }
    assert POLICY in server.all_prompt_text()


def test_openai_base_url_may_end_with_a_slash_and_japanese_survives(server: ChatServer) -> None:
    server.answer_with(lambda body: body["messages"][-1]["content"][-8:])
    with provider_for(server.base_url + "/") as provider:
        text = provider.complete(request("ビジネスクラスは使えますか")).text
    assert text == "ビジネスクラスは使えますか"[-8:]
    assert server.requests[0].path == "/v1/chat/completions"


def test_openai_uses_a_given_client_and_leaves_it_open(server: ChatServer) -> None:
    with httpx.Client(trust_env=False) as client:
        provider = provider_for(server, client=client)
        provider.complete(request("q"))
        provider.close()
        assert not client.is_closed
    with provider_for(server) as owned:
        owned.complete(request("q"))
    assert owned._client.is_closed


def test_openai_ignores_proxy_environment(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead_proxy = closed_base_url().removesuffix("/v1")
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with provider_for(server, max_retries=0) as provider:
        assert provider.complete(request("q")).text == "Employees fly economy. [S1]"


# --------------------------------------------------------------------------- openai: failures


def test_openai_retries_5xx_then_succeeds(server: ChatServer) -> None:
    server.fail(503, times=2)
    sleeps = Sleeps()
    with provider_for(server, sleeps=sleeps, max_retries=2) as provider:
        assert provider.complete(request("q")).text == "Employees fly economy. [S1]"
    assert server.request_count == 3
    assert sleeps.calls == [0.25, 0.5]  # small exponential backoff


def test_openai_retries_429_honouring_a_capped_retry_after(server: ChatServer) -> None:
    server.fail(429, times=1, retry_after="1")
    server.fail(429, times=1, retry_after="3600")
    sleeps = Sleeps()
    with provider_for(server, sleeps=sleeps, max_retries=2, max_backoff_s=2.0) as provider:
        assert provider.complete(request("q")).text.endswith("[S1]")
    assert sleeps.calls == [1.0, 2.0]


def test_openai_gives_up_after_bounded_retries(server: ChatServer) -> None:
    server.fail(500)
    sleeps = Sleeps()
    with (
        provider_for(server, sleeps=sleeps, max_retries=2) as provider,
        pytest.raises(ProviderError, match=r"after 3 attempts: HTTP 500"),
    ):
        provider.complete(request("q"))
    assert server.request_count == 3
    assert len(sleeps.calls) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 307])
def test_openai_does_not_retry_other_statuses(server: ChatServer, status: int) -> None:
    extra = (("Location", "http://127.0.0.1:1/elsewhere"),) if status == 307 else ()
    server.reply_raw(Reply(status=status, body=b"{}", headers=extra))
    sleeps = Sleeps()
    with (
        provider_for(server, sleeps=sleeps) as provider,
        pytest.raises(ProviderError, match=rf"HTTP {status} \(not retried\)"),
    ):
        provider.complete(request("q"))
    assert server.request_count == 1
    assert sleeps.calls == []


def test_openai_timeout_is_bounded(server: ChatServer) -> None:
    server.hang(10.0)
    started = time.monotonic()
    with (
        provider_for(server, timeout_s=0.3, max_retries=1) as provider,
        pytest.raises(ProviderError, match="after 2 attempts: timeout"),
    ):
        provider.complete(request("q"))
    assert time.monotonic() - started < 3.0
    assert server.request_count == 2


def test_openai_whole_exchange_deadline_stops_a_trickling_server(server: ChatServer) -> None:
    server.trickle(chunk_delay_s=0.05)  # each byte arrives quickly; the whole reply takes ~15 s
    started = time.monotonic()
    with (
        provider_for(server, timeout_s=0.3, max_retries=0) as provider,
        pytest.raises(ProviderError, match="timeout"),
    ):
        provider.complete(request("q"))
    assert time.monotonic() - started < 3.0


def test_openai_garbage_is_a_provider_error_without_retry(server: ChatServer) -> None:
    server.garbage()
    with (
        provider_for(server) as provider,
        pytest.raises(ProviderError, match="not JSON") as info,
    ):
        provider.complete(request("q"))
    assert isinstance(info.value.__cause__, ValueError)  # translated, cause chained
    assert server.request_count == 1


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"choices": []},
        {"choices": [{}]},
        {"choices": [{"message": {}}]},
        {"choices": [{"message": {"content": None}}]},
        {"choices": [{"message": {"content": ["parts"]}}]},
        ["not", "an", "object"],
    ],
)
def test_openai_wrong_shape_is_a_provider_error(server: ChatServer, payload: Any) -> None:
    server.reply_json(payload)
    with (
        provider_for(server) as provider,
        pytest.raises(ProviderError, match=r"choices\[0\]\.message\.content"),
    ):
        provider.complete(request("q"))


def test_openai_connection_refused_is_a_provider_error() -> None:
    sleeps = Sleeps()
    with (
        provider_for(closed_base_url(), sleeps=sleeps, max_retries=1) as provider,
        pytest.raises(ProviderError, match="connection error") as info,
    ):
        provider.complete(request("q"))
    assert isinstance(info.value.__cause__, httpx.TransportError)
    assert len(sleeps.calls) == 1  # retried once


@pytest.mark.parametrize(
    "mode", ["500", "429", "400", "echo", "garbage", "wrong-shape", "hang", "refused"]
)
def test_provider_errors_contain_no_prompt_text_and_no_key(server: ChatServer, mode: str) -> None:
    base_url = server.base_url
    if mode in ("500", "429", "400"):
        server.fail(int(mode))
    elif mode == "echo":
        server.echo_error(400)  # the server quotes the prompt back in its error body
    elif mode == "garbage":
        server.garbage(b"<html>" + CANARY.encode() + b" " + KEY.encode())
    elif mode == "wrong-shape":
        server.reply_json({"error": {"message": f"bad prompt: {CANARY}", "key": KEY}})
    elif mode == "hang":
        server.hang(10.0)
    else:
        base_url = closed_base_url()
    with (
        provider_for(base_url, api_key=Secret(KEY), timeout_s=0.3, max_retries=1) as provider,
        pytest.raises(ProviderError) as info,
    ):
        provider.complete(canary_request())
    text = error_chain_text(info.value)
    assert CANARY not in text
    assert KEY not in text
    assert info.value.to_dict()["error"] == "provider_error"
    if mode != "refused":
        assert CANARY in server.all_prompt_text()  # the canary did reach the server


def test_error_message_names_the_endpoint_without_credentials(server: ChatServer) -> None:
    server.fail(500)
    url = server.base_url.replace("http://", f"http://user:{KEY}@")
    with (
        provider_for(url, max_retries=0) as provider,
        pytest.raises(ProviderError) as info,
    ):
        provider.complete(request("q"))
    assert f"127.0.0.1:{server.port}/v1/chat/completions" in info.value.message
    assert KEY not in error_chain_text(info.value)


# --------------------------------------------------------------------------- the chat server


def test_chat_server_rejects_other_paths_and_stops_promptly() -> None:
    started = time.monotonic()
    with ChatServer() as server:
        server.hang(30.0)
        with httpx.Client(trust_env=False) as client:
            assert client.get(server.base_url + "/models").status_code == 404
            with pytest.raises(httpx.TimeoutException):
                client.post(server.base_url + "/chat/completions", json={}, timeout=0.2)
    assert time.monotonic() - started < 3.0  # the hung handler was cut short at shutdown
    assert server.request_count == 2
