from __future__ import annotations

from pathlib import Path

import pytest

from harvey.config.settings import Settings, base_url_for, load_settings, resolve_paths
from harvey.errors import ConfigError


def write(ws: Path, text: str) -> None:
    (ws / "harvey.yaml").write_text(text, encoding="utf-8")


def test_defaults_without_a_file(tmp_path: Path) -> None:
    settings = load_settings(resolve_paths(tmp_path), env={})
    assert settings.backend == "auto"
    assert settings.tools.max_rounds == 10
    assert settings.chunking.threshold == 0.80
    assert settings.chunking.chunk_size_bytes == "auto"
    assert settings.offload.threshold == 10_000
    assert "cat" in settings.security.allowed_commands


def test_precedence_flags_over_env_over_file(tmp_path: Path) -> None:
    write(tmp_path, "backend: ollama\nmodel: from-file\n")
    paths = resolve_paths(tmp_path)
    assert load_settings(paths, env={}).model == "from-file"
    assert load_settings(paths, env={"HARVEY_MODEL": "from-env"}).model == "from-env"
    flagged = load_settings(paths, {"model": "from-flag"}, env={"HARVEY_MODEL": "from-env"})
    assert flagged.model == "from-flag"
    assert flagged.backend == "ollama"


def test_unknown_key_names_file_line_and_allowed_keys(tmp_path: Path) -> None:
    write(tmp_path, "backend: ollama\nmodle: llama3\n")
    with pytest.raises(ConfigError) as err:
        load_settings(resolve_paths(tmp_path), env={})
    message = str(err.value)
    assert str(tmp_path / "harvey.yaml") in message
    assert "line 2" in message
    assert "'modle'" in message
    assert "allowed:" in message and "model" in message
    assert err.value.exit_code == 2


def test_nested_wrong_type_names_the_key_path_and_line(tmp_path: Path) -> None:
    write(tmp_path, "chunking:\n  enabled: true\n  overlap: words\n")
    with pytest.raises(ConfigError) as err:
        load_settings(resolve_paths(tmp_path), env={})
    assert "chunking.overlap" in str(err.value)
    assert "line 3" in str(err.value)
    assert "paragraph" in str(err.value)


@pytest.mark.parametrize("value", ["0", "1.5", "-0.2", "lots"])
def test_threshold_must_be_in_range(tmp_path: Path, value: str) -> None:
    write(tmp_path, f"chunking:\n  threshold: {value}\n")
    with pytest.raises(ConfigError, match=r"chunking\.threshold"):
        load_settings(resolve_paths(tmp_path), env={})


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    write(tmp_path, "backend: ollama\nmodel: [unclosed\nfoo: bar\n")
    with pytest.raises(ConfigError, match=r"line \d+.*invalid YAML"):
        load_settings(resolve_paths(tmp_path), env={})


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    write(tmp_path, "- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(resolve_paths(tmp_path), env={})


def test_chunk_size_tokens_converts_to_bytes(tmp_path: Path) -> None:
    write(tmp_path, "chunking:\n  chunk_size_tokens: 1500\n")
    assert load_settings(resolve_paths(tmp_path), env={}).chunking.chunk_size_bytes == 6000
    write(tmp_path, "chunking:\n  chunk_size_tokens: 1500\n  chunk_size_bytes: 4000\n")
    assert load_settings(resolve_paths(tmp_path), env={}).chunking.chunk_size_bytes == 4000


def test_duplicate_route_names_are_rejected(tmp_path: Path) -> None:
    write(tmp_path, "routes:\n  - name: a\n  - name: a\n")
    with pytest.raises(ConfigError, match="used twice"):
        load_settings(resolve_paths(tmp_path), env={})


def test_loading_writes_nothing(tmp_path: Path) -> None:
    write(tmp_path, "nonsense: 1\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ConfigError):
        load_settings(resolve_paths(tmp_path), env={})
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_base_url_from_environment() -> None:
    s = Settings()
    assert base_url_for("ollama", s, {"OLLAMA_HOST": "10.0.0.5:11434"}) == "http://10.0.0.5:11434"
    assert base_url_for("openai", s, {"OPENAI_BASE_URL": "http://x/v1"}) == "http://x/v1"
    assert base_url_for("openai", Settings(base_url="http://y/v1"), {}) == "http://y/v1"
    assert base_url_for("local", s, {}) == "embedded"


def test_missing_workspace_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        resolve_paths(tmp_path / "nope")


def test_harvey_home_from_env(tmp_path: Path) -> None:
    paths = resolve_paths(tmp_path, env={"HARVEY_HOME": str(tmp_path / "home")})
    assert paths.sessions_db == tmp_path / "home" / "sessions.db"


@pytest.mark.parametrize(
    ("text", "key", "lines"),
    [
        ("model: a\nbackend: openai\nmodel: b\n", "model", (1, 3)),
        ("chunking:\n  overlap: none\n  max_chunks: 3\n  overlap: sentence\n", "overlap", (2, 4)),
        (
            "routes:\n  - name: one\n    model: x\n    model: y\n",
            "model",
            (3, 4),
        ),
        ("tools:\n  enabled: true\ntools:\n  max_rounds: 3\n", "tools", (1, 3)),
    ],
)
def test_duplicate_keys_are_an_error_naming_both_lines(
    tmp_path: Path, text: str, key: str, lines: tuple[int, int]
) -> None:
    write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_settings(resolve_paths(tmp_path), env={})
    message = str(err.value)
    assert str(tmp_path / "harvey.yaml") in message
    assert f"'{key}'" in message and "twice" in message
    assert f"lines {lines[0]} and {lines[1]}" in message
    assert "\n" not in message


def test_merge_keys_may_still_be_overridden(tmp_path: Path) -> None:
    write(
        tmp_path,
        "routes:\n  - &base\n    name: one\n    model: x\n  - <<: *base\n    name: two\n",
    )
    settings = load_settings(resolve_paths(tmp_path), env={})
    assert [(r.name, r.model) for r in settings.routes] == [("one", "x"), ("two", "x")]


@pytest.mark.parametrize(
    "url", ["not a url", "localhost:8080", "ftp://host/v1", "http://", "http:///v1", "http://h:x/"]
)
def test_a_base_url_must_be_http_with_a_host(tmp_path: Path, url: str) -> None:
    paths = resolve_paths(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_settings(paths, {"base_url": url}, env={})
    assert "base_url" in str(err.value) and "http://" in str(err.value)
    assert "Value error" not in str(err.value)
    with pytest.raises(ConfigError, match="base_url"):
        load_settings(paths, env={"HARVEY_BASE_URL": url})
    write(tmp_path, f"routes:\n  - name: r\n    base_url: '{url}'\n")
    with pytest.raises(ConfigError) as err:
        load_settings(paths, env={})
    assert "line 3" in str(err.value) and "routes.0.base_url" in str(err.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "https://api.example.com/v1"])
def test_good_base_urls_pass(tmp_path: Path, url: str) -> None:
    write(tmp_path, f"routes:\n  - name: r\n    base_url: {url}\n")
    paths = resolve_paths(tmp_path)
    settings = load_settings(paths, {"base_url": url}, env={}, decide=lambda _review: True)
    assert settings.base_url == url and settings.routes[0].base_url == url


def test_a_workspace_name_too_long_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="too long"):
        resolve_paths(tmp_path / ("w" * 300))
