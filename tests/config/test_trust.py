"""harvey.config.trust: the table that decides what an untrusted harvey.yaml may set, the trust
store, and the layers (HARVEY_HOME's file < the workspace's < environment < flags)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from harvey.config.settings import WORKSPACE_RULES, Settings, load_settings, resolve_paths
from harvey.config.trust import Screened, Setting, digest, leaves
from harvey.config.trust import narrows as narrows_by
from harvey.config.trust import screen as screen_by
from harvey.config.trust_store import TrustStore
from harvey.errors import ConfigError

NARROWING = WORKSPACE_RULES.narrowing
NEVER_IN_WORKSPACE = WORKSPACE_RULES.never


def narrows(setting: Setting) -> bool:
    return narrows_by(setting, WORKSPACE_RULES)


def screen(data: dict[str, Any]) -> Screened:
    return screen_by(data, rules=WORKSPACE_RULES)


def leaf_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every leaf of the settings model, as the table names it (``routes[].base_url``)."""
    found: set[str] = set()
    for name, field in model.model_fields.items():
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        inner = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found |= leaf_paths(annotation, f"{prefix}{name}.")
        elif inner is not None and getattr(annotation, "__origin__", None) is list:
            found |= leaf_paths(inner, f"{prefix}{name}[].")
        elif inner is not None and getattr(annotation, "__origin__", None) is dict:
            found |= leaf_paths(inner, f"{prefix}{name}.*.")  # named stanzas: mcp.servers
        else:
            found.add(prefix + name)
    return found


ALL = leaf_paths(Settings)
MCP_SERVER_KEYS = (
    "command", "args", "env", "url", "token_env", "token_command", "confine", "network",
    "reads", "writes", "timeout",
)  # fmt: skip


def test_the_table_names_only_real_settings() -> None:
    assert NARROWING.keys() <= ALL, NARROWING.keys() - ALL
    assert NEVER_IN_WORKSPACE <= ALL


def test_everything_else_widens_and_a_new_key_needs_a_decision() -> None:
    """The class is closed: every leaf not in the table widens. A key added to the
    settings later fails here until someone decides which side it is on."""
    widening = {p for p in ALL - NARROWING.keys() if not p.startswith("security.")}
    assert widening == {
        "base_url",
        "endpoints[].url",
        "endpoints[].max_in_flight",
        "api_key",
        "api_key_command",
        "session.directory",
        "routes[].base_url",
        "routes[].endpoints[].url",
        "routes[].endpoints[].max_in_flight",
        "routes[].api_key",
        "routes[].api_key_command",
        "analysis.ray_address",
        "mcp.allow",  # the user's own: never in a workspace file
        *(f"mcp.servers.*.{key}" for key in MCP_SERVER_KEYS),  # programs the repository chose
    }
    assert {p for p in ALL if p.startswith("security.")} & NARROWING.keys() == set()


@pytest.mark.parametrize(
    ("path", "value", "allowed"),
    [
        ("memory.embedder", "local", True),
        ("memory.embedder", "ollama:nomic", True),
        ("memory.embedder", "openai:text-embedding-3-small", False),
        ("analysis.executor", "local", True),
        ("analysis.executor", "ray", False),
        ("model", "anything", True),
        ("model", "llama3.2:3b", True),
        ("model", "models/evil.GGUF", False),
        ("model", "/home/me/other.gguf ", False),
    ],
)
def test_value_rules(path: str, value: str, allowed: bool) -> None:
    data: dict[str, Any] = {}
    node = data
    *parents, last = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    (leaf,) = list(leaves(data))
    assert narrows(leaf) is allowed


def test_a_route_with_a_server_is_held_back_whole() -> None:
    data = {"routes": [{"name": "a", "model": "m"}, {"name": "b", "base_url": "http://x/v1"}]}
    screened = screen(data)
    assert "routes" not in screened.kept
    assert [s.path for s in screened.widening] == ["routes[1].base_url"]
    narrow = screen({"routes": [{"name": "a", "model": "m"}]})
    assert narrow.kept == {"routes": [{"name": "a", "model": "m"}]} and not narrow.widening


VALUES = st.one_of(st.booleans(), st.integers(), st.text(max_size=8), st.lists(st.text(max_size=4)))
PATHS = sorted(ALL - {p for p in ALL if "[]" in p})


@st.composite
def settings_data(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for path in draw(st.lists(st.sampled_from(PATHS), unique=True, max_size=12)):
        node = data
        *parents, last = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = draw(VALUES)
    return data


@given(settings_data())
@settings(max_examples=200, deadline=None)
def test_screening_keeps_only_narrowing_leaves_and_loses_none(data: dict[str, Any]) -> None:
    screened = screen(data)
    kept = list(leaves(screened.kept))
    assert all(narrows(leaf) for leaf in kept)
    refused = {s.loc for s in screened.widening + screened.forbidden}
    assert {s.loc for s in kept} | refused == {s.loc for s in leaves(data)}
    assert not {s.loc for s in kept} & refused


def test_the_store_is_private_by_real_path_and_hash(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "link").symlink_to(ws)
    store = TrustStore(tmp_path / "home")
    store.trust(tmp_path / "link", digest(b"a: 1\n"))
    assert store.is_trusted(ws, digest(b"a: 1\n"))
    assert not store.is_trusted(ws, digest(b"a: 2\n"))
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "home").stat().st_mode) == 0o700
    assert [e.workspace for e in store.entries()] == [str(ws)]
    names = sorted(p.name for p in (tmp_path / "home").iterdir())
    assert names == [f".{store.path.name}.lock", store.path.name]  # no temporary file left
    assert store.revoke(ws) and not store.revoke(ws)
    assert not store.is_trusted(ws, digest(b"a: 1\n"))


def test_a_store_harvey_did_not_write_is_one_line(tmp_path: Path) -> None:
    store = TrustStore(tmp_path)
    store.path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a trust store"):
        store.is_trusted(tmp_path, "x")


# -- the layers --------------------------------------------------------------------------


def test_the_users_file_is_below_the_workspace_key_by_key(
    tmp_path: Path, isolated_env: Path
) -> None:
    (isolated_env / "harvey.yaml").write_text(
        "model: home\nbase_url: http://127.0.0.1:1/v1\nchunking:\n  max_chunks: 7\n"
        "security:\n  allowed_commands: [git]\n"
    )
    (tmp_path / "harvey.yaml").write_text("model: workspace\nchunking:\n  overlap: none\n")
    paths = resolve_paths(tmp_path)
    got = load_settings(paths, env={})
    assert got.model == "workspace" and got.base_url == "http://127.0.0.1:1/v1"
    assert (got.chunking.max_chunks, got.chunking.overlap) == (7, "none")
    assert got.security.allowed_commands == ["git"]
    assert load_settings(paths, env={"HARVEY_MODEL": "env"}).model == "env"
    assert load_settings(paths, {"model": "flag"}, env={"HARVEY_MODEL": "env"}).model == "flag"


def test_decide_refuses_narrows_or_applies(tmp_path: Path) -> None:
    (tmp_path / "harvey.yaml").write_text("model: m\nbase_url: http://127.0.0.1:2/v1\n")
    paths = resolve_paths(tmp_path)
    with pytest.raises(ConfigError, match="harvey trust"):
        load_settings(paths, env={})
    asked: list[list[str]] = []

    def no(review: Any) -> bool:
        asked.append([s.path for s in review.widening])
        return False

    narrowed = load_settings(paths, env={}, decide=no)
    assert (narrowed.model, narrowed.base_url) == ("m", None) and asked == [["base_url"]]
    applied = load_settings(paths, env={}, decide=lambda _r: True)
    assert applied.base_url == "http://127.0.0.1:2/v1"


def test_a_trusted_file_is_not_put_to_decide(tmp_path: Path, isolated_env: Path) -> None:
    content = b"security:\n  shell_timeout: 5\n"
    (tmp_path / "harvey.yaml").write_bytes(content)
    TrustStore(isolated_env).trust(tmp_path, digest(content))

    def never(_review: Any) -> bool:
        raise AssertionError("asked about a trusted file")

    assert load_settings(resolve_paths(tmp_path), env={}, decide=never).security.shell_timeout == 5


def test_a_file_that_only_narrows_is_not_put_to_decide(tmp_path: Path) -> None:
    (tmp_path / "harvey.yaml").write_text("model: m\nrag:\n  top_k: 2\n")

    def never(_review: Any) -> bool:
        raise AssertionError("asked about a narrowing file")

    got = load_settings(resolve_paths(tmp_path), env={}, decide=never)
    assert (got.model, got.rag.top_k) == ("m", 2)


def test_a_workspace_that_is_harvey_home_reads_the_file_once_as_the_users(
    isolated_env: Path,
) -> None:
    (isolated_env / "harvey.yaml").write_text("base_url: http://127.0.0.1:3/v1\n")
    assert load_settings(resolve_paths(isolated_env), env={}).base_url == "http://127.0.0.1:3/v1"


def test_api_key_and_api_key_command_together_is_an_error(
    isolated_env: Path, tmp_path: Path
) -> None:
    (isolated_env / "harvey.yaml").write_text("api_key: abcdefgh12345\napi_key_command: pass x\n")
    with pytest.raises(ConfigError, match="not both"):
        load_settings(resolve_paths(tmp_path), env={})


def test_the_store_file_is_json_a_person_can_read(tmp_path: Path) -> None:
    store = TrustStore(tmp_path)
    store.trust(tmp_path, digest(None))
    data = json.loads(store.path.read_text())
    assert data["version"] == 1 and data["workspaces"][str(tmp_path)]["sha256"] == "absent"


def test_the_question_shows_no_secret_and_no_control() -> None:
    from pydantic import SecretStr

    from harvey.cli.trust import show_value

    assert show_value(SecretStr("sk-hidden-0123456789")) == "(a secret, not shown)"
    assert show_value("https://me:pw-123456@host/v1") == "https://***@host/v1"
    assert show_value(["\x1b]52;c;aGk=\x07", "git"]) == "[^[]52;c;aGk=^G, git]"
    assert show_value("x" * 500).endswith("…") and len(show_value("x" * 500)) == 160


def test_sessions_trusting_at_once_all_keep_their_entry(tmp_path: Path) -> None:
    import threading

    folders = [tmp_path / f"ws{n}" for n in range(8)]
    for folder in folders:
        folder.mkdir()
    store = TrustStore(tmp_path / "home")
    threads = [threading.Thread(target=store.trust, args=(f, digest(b"x"))) for f in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(e.workspace for e in store.entries()) == sorted(str(f) for f in folders)


def test_tool_modes_narrow_but_only_as_modes() -> None:
    """``tools.mode`` and ``tools.models`` choose how calls are read; every call still
    meets the registry, approval and confinement, so they apply untrusted."""
    kept = screen({"tools": {"mode": "text", "models": {"qwen2.5:0.5b": "constrained"}}})
    assert not kept.widening and kept.kept["tools"]["models"] == {"qwen2.5:0.5b": "constrained"}
    odd = screen({"tools": {"models": {"qwen": "everything"}}})
    assert [s.path for s in odd.widening] == ["tools.models.qwen"]


def test_a_new_narrowing_setting_is_one_declaration() -> None:
    """A setting declares what a workspace may do with it; one that declares nothing widens
    (the class is closed by default), so adding a key a workspace may narrow is one field."""
    from typing import Annotated

    from pydantic import BaseModel

    from harvey.config.field_trust import Workspace, more_than, workspace_rules

    class Stanza(BaseModel):
        shade: Annotated[str, Workspace()] = "grey"
        depth: Annotated[int, Workspace(limit=more_than)] = 3
        host: str = "here"

    class Model(BaseModel):
        extra: Stanza = Stanza()
        items: list[Stanza] = []

    rules = workspace_rules(Model)
    assert set(rules.narrowing) == {"extra.shade", "extra.depth", "items[].shade", "items[].depth"}
    assert set(rules.limits) == {"extra.depth", "items[].depth"}
    screened = screen_by(
        {"extra": {"shade": "blue", "depth": 2, "host": "there"}},
        {"extra": {"depth": 2}},
        rules=rules,
    )
    assert screened.kept == {"extra": {"shade": "blue", "depth": 2}}
    assert [s.path for s in screened.widening] == ["extra.host"]
    lifted = screen_by({"extra": {"depth": 5}}, {"extra": {"depth": 2}}, rules=rules)
    assert [s.path for s in lifted.widening] == ["extra.depth"]
