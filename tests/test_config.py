"""Configuration: defaults, every section, errors that name the key, and the lookup contract."""

from __future__ import annotations

import dataclasses
import re
import tomllib
import typing
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from clearance.config import (
    AssistantSettings,
    CorpusSettings,
    EmbeddingSettings,
    IngestSettings,
    LLMSettings,
    RealtimeCheckSettings,
    RetrievalSettings,
    SensitivitySettings,
    Settings,
    StoreSettings,
    TraceSettings,
    find_config,
    load_settings,
    parse_duration,
    settings_from_dict,
)
from clearance.errors import ClearanceError, ConfigError
from clearance.model import Sensitivity

FULL: dict[str, Any] = {
    "store": {"backend": "sqlite", "path": "/var/lib/clearance/index.db"},
    "sensitivity": {
        "default_level": "confidential",
        "restricted_filename_patterns": ["*board-minutes*", "*.key"],
        "restricted_keywords": ["attorney-client privileged"],
        "escalate_unknown_to_restricted": True,
    },
    "corpora": {
        "public": {"description": "Press", "max_sensitivity": "PUBLIC", "authority": 3},
        "hr": {
            "revocation_sla": "15m",
            "realtime_check": True,
            "realtime": {"url": "http://127.0.0.1:9/check", "timeout": "250ms", "cache_ttl": 60},
            "max_sensitivity": "RESTRICTED",
        },
    },
    "assistants": {
        "general": {"corpora": ["public"], "max_sensitivity": "INTERNAL", "description": "Q&A"},
        "people": {"corpora": ["public", "hr"]},
    },
    "embedding": {
        "provider": "none",
        "batch_size": 8,
        "max_tokens": 128,
        "persist_restricted": True,
    },
    "ingest": {
        "chunk_size": 400,
        "chunk_overlap": 40,
        "default_corpus": "wiki",
        "default_source_system": "share",
    },
    "retrieval": {"k": 7, "rrf_k": 30, "candidates": 20},
    "llm": {
        "provider": "openai",
        "base_url": "http://127.0.0.1:8000/v1",
        "model": "tiny",
        "api_key_env": "MY_KEY",
        "timeout_s": "1m",
        "max_retries": 0,
    },
    "trace": {"enabled": False, "retention": "7d", "hmac_key_env": "OTHER_KEY"},
}


def parse(data: dict[str, Any], root: Path | None = None) -> Settings:
    return settings_from_dict(data, root=root or Path("/srv/clearance"))


# --------------------------------------------------------------------------- defaults


def test_empty_config_gives_the_documented_defaults(tmp_path: Path) -> None:
    s = settings_from_dict({}, root=tmp_path)

    assert s.root == tmp_path.resolve()
    assert s.source is None
    assert s.store == StoreSettings(backend="sqlite", path=Path("data/clearance.db"))
    assert s.db_path == tmp_path.resolve() / "data" / "clearance.db"
    assert s.sensitivity == SensitivitySettings(
        default_level=Sensitivity.INTERNAL,
        restricted_filename_patterns=(),
        restricted_keywords=(),
        escalate_unknown_to_restricted=False,
    )
    assert s.corpora == {}
    assert s.assistants == {}
    assert s.embedding == EmbeddingSettings("minilm", 32, 256, False)
    assert s.ingest == IngestSettings(800, 120, "default", "files")
    assert s.retrieval == RetrievalSettings(k=5, rrf_k=60, candidates=50, cjk_vector_weight=0.0)
    assert s.llm == LLMSettings("extractive", "", "", "", 30.0, 2)
    assert s.trace == TraceSettings(True, 30 * 86400.0, "CLEARANCE_TRACE_KEY")


def test_an_unconfigured_corpus_gets_safe_defaults() -> None:
    corpus = parse({}).corpus("anything")

    assert corpus == CorpusSettings(name="anything")
    assert corpus.revocation_sla_s == 86400.0
    assert corpus.realtime_check is False
    assert corpus.max_sensitivity is Sensitivity.CONFIDENTIAL


def test_settings_are_frozen() -> None:
    s = parse({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.retrieval.k = 9  # type: ignore[misc]


# --------------------------------------------------------------------------- every section


def test_every_section_is_parsed() -> None:
    s = parse(FULL)

    assert s.store.path == Path("/var/lib/clearance/index.db")
    assert s.db_path == Path("/var/lib/clearance/index.db")  # absolute paths stay absolute
    assert s.sensitivity.default_level is Sensitivity.CONFIDENTIAL  # case-insensitive
    assert s.sensitivity.restricted_filename_patterns == ("*board-minutes*", "*.key")
    assert s.sensitivity.restricted_keywords == ("attorney-client privileged",)
    assert s.sensitivity.escalate_unknown_to_restricted is True

    assert list(s.corpora) == ["public", "hr"]
    public = s.corpora["public"]
    assert (public.description, public.max_sensitivity, public.authority) == (
        "Press",
        Sensitivity.PUBLIC,
        3,
    )
    assert public.revocation_sla_s == 86400.0
    hr = s.corpora["hr"]
    assert hr.revocation_sla_s == 900.0
    assert hr.realtime_check is True
    assert hr.realtime == RealtimeCheckSettings("http://127.0.0.1:9/check", 0.25, 60.0)
    assert hr.max_sensitivity is Sensitivity.RESTRICTED
    assert s.corpus("hr") is hr

    assert s.assistants["general"] == AssistantSettings(
        "general", ("public",), Sensitivity.INTERNAL, "Q&A"
    )
    assert s.assistants["people"].corpora == ("public", "hr")
    assert s.assistants["people"].max_sensitivity is Sensitivity.CONFIDENTIAL

    assert s.embedding == EmbeddingSettings("none", 8, 128, True)
    assert s.ingest == IngestSettings(400, 40, "wiki", "share")
    assert s.retrieval == RetrievalSettings(7, 30, 20)
    assert s.llm == LLMSettings("openai", "http://127.0.0.1:8000/v1", "tiny", "MY_KEY", 60.0, 0)
    assert s.trace == TraceSettings(False, 7 * 86400.0, "OTHER_KEY")


def test_inferred_sentences_are_dropped_unless_label_is_chosen() -> None:
    assert parse({}).answer.inferred == "drop"
    assert parse({"answer": {"inferred": "label"}}).answer.inferred == "label"


def test_integer_is_accepted_where_a_float_is_expected_but_not_the_reverse() -> None:
    assert parse({"corpora": {"c": {"revocation_sla": 3600}}}).corpora["c"].revocation_sla_s == 3600
    with pytest.raises(ConfigError, match=r"^retrieval\.k: expected int, got float 2\.5"):
        parse({"retrieval": {"k": 2.5}})


# --------------------------------------------------------------------------- errors name the key


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"corpora": {"x": {"revocation_sla": "soon"}}},
            r"^corpora\.x\.revocation_sla: expected a duration such as '15m'.*'soon'",
        ),
        ({"corpora": {"x": {"revocation_sla": -5}}}, r"^corpora\.x\.revocation_sla: .*negative"),
        ({"colour": "blue"}, r"^unknown setting 'colour'$"),
        ({"store": {"pth": "x.db"}}, r"^unknown setting 'store\.pth'; did you mean 'path'\?$"),
        (
            {"corpora": {"hr": {"realtime": {"url": "http://x", "ttl": "1s"}}}},
            r"^unknown setting 'corpora\.hr\.realtime\.ttl'$",
        ),
        ({"assistants": {"a": {"corpora": [], "ceiling": "PUBLIC"}}}, r"'assistants\.a\.ceiling'"),
        ({"ingest": {"chunk_size": "800"}}, r"^ingest\.chunk_size: expected int, got str '800'"),
        ({"ingest": {"chunk_size": True}}, r"^ingest\.chunk_size: expected int, got bool True"),
        ({"ingest": {"chunk_size": 0}}, r"^ingest\.chunk_size: must be a positive integer, got 0"),
        ({"trace": {"enabled": "yes"}}, r"^trace\.enabled: expected bool, got str 'yes'"),
        ({"store": "sqlite"}, r"^store: expected a table"),
        (
            {"sensitivity": {"restricted_keywords": ["ok", 3]}},
            r"^sensitivity\.restricted_keywords: expected a list of strings",
        ),
        (
            {"sensitivity": {"default_level": "SECRET"}},
            r"^sensitivity\.default_level: bad sensitivity 'SECRET'",
        ),
        (
            {"corpora": {"hr": {"max_sensitivity": "TOP"}}},
            r"^corpora\.hr\.max_sensitivity: bad sensitivity 'TOP'",
        ),
        (
            {"corpora": {"public": {}}, "assistants": {"a": {"corpora": ["public", "hr"]}}},
            r"^assistants\.a\.corpora: unknown corpus 'hr'",
        ),
        (
            {
                "corpora": {
                    "hr": {
                        "revocation_sla": "1m",
                        "realtime_check": True,
                        "realtime": {"url": "http://x", "cache_ttl": "2m"},
                    }
                }
            },
            r"^corpora\.hr\.realtime\.cache_ttl: 120s exceeds the corpus revocation_sla of 60s",
        ),
        (
            {"corpora": {"hr": {"realtime_check": True}}},
            r"^corpora\.hr\.realtime\.url: required when realtime_check = true",
        ),
        (
            {"ingest": {"chunk_size": 100, "chunk_overlap": 100}},
            r"^ingest\.chunk_overlap: must be >= 0 and smaller than chunk_size",
        ),
        ({"ingest": {"chunk_overlap": -1}}, r"^ingest\.chunk_overlap: must be >= 0"),
        ({"store": {"backend": "mysql"}}, r"^store\.backend: unsupported backend 'mysql'"),
        ({"store": {"backend": "postgres"}}, r"^store\.dsn: required with backend"),
        (
            {"store": {"backend": "postgres", "dsn": "host=db user=r password=x"}},
            r"^store\.dsn: holds a password",
        ),
        (
            {"store": {"backend": "postgres", "dsn": "postgresql://db/x", "writer_dsn": "x"}},
            r"^store\.dsn: name the role",
        ),
        (
            {"store": {"dsn": "postgresql://r:pw@db/x"}},
            r"^store\.dsn: holds a password",
        ),
        (
            {"store": {"backend": "postgres", "dsn": "user=r", "pool_size": 0}},
            r"^store\.writer_dsn",
        ),
        (
            {"store": {"dsn": "user=r", "writer_dsn": "user=w", "pool_size": 0}},
            r"^store\.pool_size: expected a positive integer",
        ),
        ({"embedding": {"provider": "magic"}}, r"^embedding\.provider: unknown provider 'magic'"),
        ({"llm": {"timeout_s": "fast"}}, r"^llm\.timeout_s: expected a duration"),
        (
            {"answer": {"inferred": "show"}},
            r'^answer\.inferred: must be "drop" or "label", got \'show\'',
        ),
        ({"answer": {"inferred": True}}, r"^answer\.inferred: expected str, got bool"),
    ],
)
def test_a_bad_setting_is_an_error_naming_its_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse(data)
    assert info.value.exit_code == 2
    assert isinstance(info.value, ClearanceError)


@pytest.mark.parametrize(
    ("data", "named"),
    [
        # a table the file does not write is still suggested: the whole settings are read
        ({"corpus": {"hr": {}}}, "unknown setting 'corpus'; did you mean 'corpora'?"),
        (
            {"corpora": {"hr": {"max_sensitivty": "INTERNAL"}}},
            "unknown setting 'corpora.hr.max_sensitivty'; did you mean 'max_sensitivity'?",
        ),
        (
            {"assistants": {"hr": {"corpora": ["hr"], "max_sensitvity": "INTERNAL"}}},
            "did you mean 'max_sensitivity'?",
        ),
        # keys as the file writes them, not the fields they fill
        (
            {"corpora": {"hr": {"revocation_slaa": "15m"}}},
            "unknown setting 'corpora.hr.revocation_slaa'; did you mean 'revocation_sla'?",
        ),
        # nothing near: nothing suggested
        ({"store": {"colour": "blue"}}, "unknown setting 'store.colour'"),
        # nor a key the file may not write, though the settings have it
        ({"rot": "x"}, "unknown setting 'rot'"),
        ({"corpora": {"hr": {"nam": "x"}}}, "unknown setting 'corpora.hr.nam'"),
    ],
)
def test_an_unknown_key_near_a_known_one_names_it(data: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(data)
    message = info.value.message
    assert message.endswith(named), message
    assert message.count("did you mean") == named.count("did you mean")


def test_cache_ttl_equal_to_the_sla_is_allowed_and_only_checked_when_realtime_is_on() -> None:
    equal = {"revocation_sla": "1m", "realtime_check": True}
    equal["realtime"] = {"url": "http://x", "cache_ttl": "60s"}
    assert parse({"corpora": {"hr": equal}}).corpora["hr"].realtime.cache_ttl_s == 60.0
    off = {"revocation_sla": "1m", "realtime": {"cache_ttl": "1h"}}
    assert parse({"corpora": {"hr": off}}).corpora["hr"].realtime_check is False


# --------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("15m", 900.0),
        ("24h", 86400.0),
        ("30s", 30.0),
        ("250ms", 0.25),
        ("1.5h", 5400.0),
        ("2d", 172800.0),
        ("1w", 604800.0),
        (" 10 m ", 600.0),
        ("45", 45.0),
        (45, 45.0),
        (0.5, 0.5),
        ("0s", 0.0),
    ],
)
def test_parse_duration(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["soon", "15 minutes", "1h30m", "", "-5m", True, None, [1], -1])
def test_parse_duration_rejects_and_names_the_key(value: object) -> None:
    with pytest.raises(ConfigError, match=r"^corpora\.hr\.revocation_sla: "):
        parse_duration(value, "corpora.hr.revocation_sla")


# --------------------------------------------------------------------------- lookup contract


def write_config(directory: Path, text: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "clearance.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_find_config_prefers_explicit_then_clearance_home_then_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    explicit = tmp_path / "elsewhere" / "my.toml"
    home = tmp_path / "home"

    assert find_config(explicit, {"CLEARANCE_HOME": str(home)}) == explicit
    assert find_config(None, {"CLEARANCE_HOME": str(home)}) == home / "clearance.toml"
    assert find_config(None, {}) == tmp_path / "clearance.toml"
    assert find_config(None, {"CLEARANCE_HOME": ""}) == tmp_path / "clearance.toml"


def test_load_settings_takes_a_path_as_text_or_the_home_folder(tmp_path: Path) -> None:
    """``load_settings("home/clearance.toml")`` from a script stopped on an AttributeError
    of ``str``; a path as text and a home folder (standing for its clearance.toml, as
    ``CLEARANCE_HOME`` does) load the same settings as the Path of the file."""
    path = write_config(tmp_path / "home", "[retrieval]\nk = 7\n")
    assert load_settings(path).retrieval.k == 7
    assert load_settings(str(path)).retrieval.k == 7
    assert load_settings(str(tmp_path / "home")).retrieval.k == 7
    assert load_settings(tmp_path / "home").retrieval.k == 7
    with pytest.raises(ConfigError, match="no configuration at"):
        load_settings(str(tmp_path / "missing.toml"))


def test_find_config_reads_the_process_environment_only_without_an_env_mapping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLEARANCE_HOME", str(tmp_path / "home"))

    assert find_config() == tmp_path / "home" / "clearance.toml"
    assert find_config(None, {}) == tmp_path / "clearance.toml"


def test_load_settings_follows_the_lookup_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd_file = write_config(tmp_path / "cwd", "[retrieval]\nk = 1\n")
    home_file = write_config(tmp_path / "home", "[retrieval]\nk = 2\n")
    explicit = write_config(tmp_path / "explicit", "[retrieval]\nk = 3\n")
    monkeypatch.chdir(cwd_file.parent)
    env = {"CLEARANCE_HOME": str(home_file.parent)}

    assert load_settings(explicit, env).retrieval.k == 3
    assert load_settings(None, env).retrieval.k == 2
    assert load_settings(None, {}).retrieval.k == 1

    s = load_settings(None, env)
    assert s.source == home_file.resolve()
    assert s.root == home_file.parent.resolve()


def test_relative_store_path_is_resolved_against_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path / "conf", '[store]\npath = "idx/x.db"\n')
    monkeypatch.chdir(tmp_path)

    assert load_settings(config, {}).db_path == (tmp_path / "conf" / "idx" / "x.db").resolve()


def test_missing_config_names_where_it_looked(tmp_path: Path) -> None:
    env = {"CLEARANCE_HOME": str(tmp_path / "nowhere")}
    with pytest.raises(
        ConfigError, match=r"no configuration at .*nowhere.*clearance\.toml"
    ) as info:
        load_settings(None, env)
    assert "clearance init" in info.value.message
    assert "CLEARANCE_HOME" in info.value.message


def test_invalid_toml_and_bad_key_in_a_file_are_config_errors(tmp_path: Path) -> None:
    broken = write_config(tmp_path / "a", "[store\npath = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(broken, {})

    typo = write_config(tmp_path / "b", '[corpora.hr]\nrevocation_sla = "fortnight"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(typo, {})
    # The file and the line of the bad key, then the key and what is wrong with it.
    assert caught.value.message.startswith(f"{typo}:2: corpora.hr.revocation_sla: ")


def test_undecodable_config_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "clearance.toml"
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(path, {})


# --------------------------------------------------------------------------- the shipped default


def default_config_text() -> str:
    return (resources.files("clearance") / "data" / "default-config.toml").read_text("utf-8")


def uncommented_default_config() -> dict[str, Any]:
    """The shipped file with its commented example tables switched on."""
    lines = []
    for line in default_config_text().splitlines():
        example = re.match(r"^# (\[.*\]|[a-z_]+ = .*)$", line)
        lines.append(example.group(1) if example else line)
    return tomllib.loads("\n".join(lines))


def test_shipped_default_config_parses_to_the_defaults(tmp_path: Path) -> None:
    path = write_config(tmp_path, default_config_text())

    s = load_settings(path, {})

    assert s == Settings(root=tmp_path.resolve(), source=path.resolve())


def test_shipped_default_config_examples_parse() -> None:
    s = parse(uncommented_default_config())

    assert s.corpora["public"].realtime.url == "https://permissions.example/check"
    assert s.corpora["public"].realtime.cache_ttl_s <= s.corpora["public"].revocation_sla_s
    assert s.assistants["general"].corpora == ("public",)


def undocumented(cls: type[Any], table: Any, where: str) -> list[str]:
    """Fields of settings dataclass ``cls`` (recursively) that ``table`` does not show.

    A duration field ``x_s`` may be documented as ``x``; a ``Mapping[str, SomeSettings]``
    field (corpora, assistants) must show at least one example table, which is checked too.
    """
    missing: list[str] = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in ("name", "root", "source"):  # a table's own name; resolved at load time
            continue
        key = next((k for k in (f.name, f.name.removesuffix("_s")) if k in table), None)
        if key is None:
            missing.append(f"{where}{f.name}")
            continue
        hint = hints[f.name]
        value = typing.get_args(hint)[-1] if typing.get_origin(hint) is Mapping else None
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            missing += undocumented(hint, table[key], f"{where}{key}.")
        elif isinstance(value, type) and dataclasses.is_dataclass(value):
            examples = table[key]
            if not examples:
                missing.append(f"{where}{key}.<example>")
                continue
            name = next(iter(examples))
            missing += undocumented(value, examples[name], f"{where}{key}.{name}.")
    return missing


def test_every_setting_is_documented_in_the_shipped_config() -> None:
    """Docs in step with code: every field of every settings dataclass appears in the file."""
    assert undocumented(Settings, uncommented_default_config(), "") == []


def test_the_documentation_check_has_teeth() -> None:
    baseline = set(undocumented(Settings, uncommented_default_config(), ""))
    documented = uncommented_default_config()
    del documented["retrieval"]["rrf_k"]
    del documented["corpora"]["public"]["realtime"]["cache_ttl"]
    del documented["assistants"]

    found = set(undocumented(Settings, documented, "")) - baseline

    assert found == {"retrieval.rrf_k", "corpora.public.realtime.cache_ttl_s", "assistants"}


@pytest.mark.parametrize("weight", [-0.1, 1.5, "high", True])
def test_a_cjk_vector_weight_outside_zero_to_one_is_refused(tmp_path: Path, weight: object) -> None:
    value = f'"{weight}"' if isinstance(weight, str) else str(weight).lower()
    path = tmp_path / "clearance.toml"
    path.write_text(f"[retrieval]\ncjk_vector_weight = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"retrieval\.cjk_vector_weight"):
        load_settings(path)


def test_a_cjk_vector_weight_may_be_an_integer(tmp_path: Path) -> None:
    path = tmp_path / "clearance.toml"
    path.write_text("[retrieval]\ncjk_vector_weight = 1\n", encoding="utf-8")
    assert load_settings(path).retrieval.cjk_vector_weight == 1.0
