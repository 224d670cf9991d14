"""``[sources.<name>]``: what is accepted, and the errors that name the key."""

from __future__ import annotations

from typing import Any

import pytest

from clearance.config import settings_from_dict
from clearance.errors import ConfigError
from clearance.secrets import Secret
from clearance.sources.registry import build_connector

CORPORA = {"hr": {"revocation_sla": "1h"}}


def parse(source: dict[str, Any]) -> Any:
    return settings_from_dict({"corpora": CORPORA, "sources": {"share": source}})


def test_a_source_gets_intervals_inside_its_corpus_sla() -> None:
    s = parse({"kind": "filesystem", "corpus": "hr", "options": {"path": "x"}})
    src = s.sources["share"]
    assert (src.kind, src.corpus, src.options) == ("filesystem", "hr", {"path": "x"})
    assert src.permission_interval_s < s.corpora["hr"].revocation_sla_s
    assert src.content_interval_s == 3600.0


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"corpus": "hr"}, "sources.share.kind: required"),
        (
            {"kind": "filesystem", "corpus": "hrr"},
            "sources.share.corpus: 'hrr' is not a configured",
        ),
        (
            {"kind": "filesystem", "corpus": "hr", "permission_interval": "1h"},
            "sources.share.permission_interval: 3600s is not shorter",
        ),
        (
            {"kind": "filesystem", "corpus": "hr", "credentials": {"token": "abc def"}},
            "sources.share.credentials.token: expected the name of an environment variable",
        ),
        ({"kind": "filesystem", "corpus": "hr", "intervall": "1m"}, "sources.share.intervall"),
    ],
)
def test_bad_source_settings_name_the_key(source: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        parse(source)


def test_an_unknown_kind_names_the_known_ones() -> None:
    s = parse({"kind": "sharepoint-ish", "corpus": "hr"})
    with pytest.raises(ConfigError, match=r"sources\.share\.kind: unknown kind .sharepoint-ish."):
        build_connector(s, s.sources["share"])


def test_a_credential_is_read_from_the_named_variable_only_as_a_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from clearance.sources import registry

    seen: list[Secret] = []

    class Probe:
        def content_changes(self, cursor: str | None) -> list[Any]:
            return []

        def fetch(self, item: Any) -> Any:
            raise AssertionError

        def permission_changes(self, cursor: str | None) -> list[Any]:
            return []

        def groups(self) -> None:
            return None

        def close(self) -> None:
            return None

    def factory(context: Any) -> Probe:
        seen.append(context.secret("token"))
        return Probe()

    monkeypatch.setitem(registry._KINDS._factories, "probe", factory)
    s = parse({"kind": "probe", "corpus": "hr", "credentials": {"token": "PROBE_TOKEN"}})
    with pytest.raises(ConfigError, match="PROBE_TOKEN") as caught:
        build_connector(s, s.sources["share"], env={})
    assert "sources.share.credentials.token" in caught.value.message
    build_connector(s, s.sources["share"], env={"PROBE_TOKEN": "t0ken-value"})
    assert seen[0].reveal() == "t0ken-value"
    assert "t0ken-value" not in repr(seen[0])
