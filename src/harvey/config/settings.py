"""harvey.yaml → validated settings.

Precedence, highest first: command-line flags, environment, ``harvey.yaml`` at
the workspace root (only its narrowing part until the workspace is trusted:
``harvey.config.trust``), the user's own ``HARVEY_HOME/harvey.yaml``, built-in
defaults; ``harvey.config.layers`` adds them up. Loading never writes anything;
a bad file raises ``ConfigError`` naming the file, the line or key, and what is
allowed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from harvey.config.choices import Overlap, RagFloor, check_name
from harvey.config.field_trust import (
    NEVER_IN_WORKSPACE,
    Workspace,
    floor_loosened,
    mode_back_on,
    more_than,
    no_key_leaves,
    not_a_file,
    one_of,
    only_true,
    turned_off,
    workspace_rules,
)
from harvey.config.mcp_settings import McpSettings
from harvey.config.urls import check_base_url
from harvey.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from harvey.config.trust import Review

CONFIG_FILENAME = "harvey.yaml"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8080/v1"
DEFAULT_ALLOWED_COMMANDS = (
    "ls",
    "cat",
    "grep",
    "head",
    "tail",
    "wc",
    "find",
    "stat",
    "pwd",
    "echo",
    "file",
    "du",
    "sort",
    "uniq",
    "diff",
    "tree",
    "which",
)

SandboxName = Literal["auto", "landlock", "bubblewrap", "sandbox-exec", "none"]


class _Strict(BaseModel):
    # hide_input_in_errors: a validation error (and its traceback under
    # HARVEY_DEBUG) never shows the rejected value, which may be a key.
    # allow_inf_nan=False: ``shell_timeout: .inf`` or ``timeout: .nan`` is one line at load,
    # not a traceback when a timer or a sleep is finally handed the value.
    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        hide_input_in_errors=True,
        allow_inf_nan=False,
    )


ToolMode = Literal["auto", "native", "text", "constrained", "off"]
#: How calls are read (native, from text, grammar-constrained) or none: every call still
#: runs through the same registry, approval and confinement, so a workspace may choose.
TOOL_MODES = one_of("auto", "native", "text", "constrained", "off")


class ToolsSettings(_Strict):
    enabled: Annotated[bool, Workspace(limit=turned_off)] = True
    max_rounds: Annotated[int, Workspace(limit=more_than)] = Field(10, ge=1, le=100)
    # How tool calls reach the model and come back (harvey.chat.calls.tool_rounds): "auto"
    # decides by backend and what the server says; ``models`` overrides it per model.
    mode: Annotated[ToolMode, Workspace(TOOL_MODES, limit=mode_back_on)] = "auto"
    models: Annotated[dict[str, ToolMode], Workspace(TOOL_MODES, limit=mode_back_on)] = Field(
        default_factory=dict
    )


#: One day: the longest any timeout may be (a bigger one is a typo or an attack on a timer).
MAX_SECONDS = 86_400


class LimitsSettings(_Strict):
    """Resource limits every confined command runs under (setrlimit in the launcher).

    The defaults let compilers, test runners and package managers work and stop
    a fork bomb, a disk filler or a runaway loop.
    """

    processes: int = Field(1024, ge=16, le=1_000_000)  # RLIMIT_NPROC
    file_size_mb: int = Field(4096, ge=1, le=1_048_576)  # RLIMIT_FSIZE
    cpu_seconds: int = Field(3600, ge=1, le=MAX_SECONDS)  # RLIMIT_CPU
    memory_mb: int = Field(16_384, ge=64, le=1_048_576)  # RLIMIT_AS
    # The scratch folder (HOME, TMPDIR) is a tmpfs of this size and file count.
    scratch_mb: int = Field(2048, ge=16, le=1_048_576)
    scratch_files: int = Field(100_000, ge=1000, le=100_000_000)


class SecuritySettings(_Strict):
    allowed_commands: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOWED_COMMANDS))
    shell_timeout: float = Field(30.0, gt=0, le=MAX_SECONDS)
    # The OS confinement for commands; "auto" picks the best available, "none"
    # (or nothing available) makes every command ask first.
    sandbox: SandboxName = "auto"
    # More file-name patterns that hold secrets, on top of harvey.workspace.secret_files' defaults.
    secret_files: list[str] = Field(default_factory=list)
    # Approved commands may connect to pathname Unix sockets (docker.sock, an ssh agent).
    unix_sockets: bool = False
    limits: LimitsSettings = Field(default_factory=LimitsSettings)


class SessionSettings(_Strict):
    record: Annotated[bool, Workspace(only_true, limit=turned_off)] = True
    directory: str = ".harvey/sessions"


class EndpointSetting(_Strict):
    """One item of ``endpoints:``: a URL, or ``{url, max_in_flight}`` (see ``harvey.llm.pool``)."""

    url: str
    max_in_flight: int | None = Field(None, ge=1, le=256)

    @model_validator(mode="before")
    @classmethod
    def _from_url(cls, value: object) -> object:
        return {"url": value} if isinstance(value, str) else value

    @field_validator("url")
    @classmethod
    def _valid_url(cls, value: str) -> str:
        return check_base_url(value) or value


def _one_way_to_the_server(base_url: str | None, endpoints: list[EndpointSetting]) -> None:
    if base_url and endpoints:
        raise ValueError("give base_url or endpoints, not both (endpoints replaces base_url)")


class RouteSettings(_Strict):
    name: Annotated[str, Workspace()] = Field(min_length=1)
    backend: Annotated[str, Workspace()] = "openai"  # one of config/choices.py's routable names
    base_url: str | None = None
    endpoints: list[EndpointSetting] = Field(default_factory=list)
    model: Annotated[str | None, Workspace(not_a_file)] = None
    api_key: Annotated[SecretStr | None, NEVER_IN_WORKSPACE] = (
        None  # unwrapped only where the Authorization header is built
    )
    api_key_command: Annotated[str | None, NEVER_IN_WORKSPACE] = Field(
        None, min_length=1
    )  # prints the key on stdout

    @field_validator("base_url")
    @classmethod
    def _valid_base_url(cls, value: str | None) -> str | None:
        return check_base_url(value)

    @field_validator("backend", mode="before")
    @classmethod
    def _known_backend(cls, value: object) -> str:
        return check_name(value, route=True)

    @model_validator(mode="after")
    def _one_way(self) -> RouteSettings:
        _one_way_to_the_server(self.base_url, self.endpoints)
        return self


class ChunkingSettings(_Strict):
    enabled: Annotated[bool, Workspace()] = True
    threshold: Annotated[float, Workspace()] = Field(0.80, gt=0, le=1)
    # "auto": chunks fill a share of the map model's usable context (context/budget.py)
    chunk_size_bytes: Annotated[
        Annotated[int, Field(ge=200, le=1 << 40)] | Literal["auto"], Workspace()
    ] = "auto"
    chunk_size_tokens: Annotated[int | None, Workspace()] = Field(None, ge=50, le=1 << 38)
    max_chunks: Annotated[int, Workspace(limit=more_than)] = Field(20, ge=1, le=1_000_000)
    overlap: Annotated[Overlap, Workspace()] = "paragraph"
    concurrency: Annotated[int | None, Workspace(limit=more_than)] = Field(None, ge=1, le=64)

    @model_validator(mode="after")
    def _tokens_to_bytes(self) -> ChunkingSettings:
        # The design doc speaks in tokens; the chunker works in bytes. Convert
        # with the estimator's ratio (4 bytes per token) so both spellings work.
        if self.chunk_size_tokens is not None and "chunk_size_bytes" not in self.model_fields_set:
            object.__setattr__(self, "chunk_size_bytes", self.chunk_size_tokens * 4)
        return self

    @classmethod
    def partial(cls, **values: object) -> ChunkingSettings:
        """Per-run overrides (``harvey analyze --chunk-size``, ``/read-chunks --overlap``):
        a stanza with only the values given (``None`` means "not given"), validated the
        same way as the file's; ``overridden_by`` lays it over the file's stanza."""
        given = {key: value for key, value in values.items() if value is not None}
        try:
            return cls.model_validate(given)
        except ValidationError as exc:
            error = exc.errors()[0]
            key = ".".join(str(part) for part in error["loc"])
            raise UsageError(f"chunking.{key}: {_describe(dict(error))}") from None

    def overridden_by(self, overrides: ChunkingSettings) -> ChunkingSettings:
        """This stanza with every value ``overrides`` sets replacing its own."""
        merged = self.model_dump(include=self.model_fields_set)
        merged.update(overrides.model_dump(include=overrides.model_fields_set))
        return ChunkingSettings.model_validate(merged)


class AnalysisSettings(_Strict):
    """Where an analysis runs its map calls (here, or on a Ray cluster), how it finds
    evidence and who writes its answer (``analysis/sizes.py``: ``auto`` asks the model's size)."""

    executor: Annotated[Literal["local", "ray"], Workspace(one_of("local"))] = "local"
    ray_address: str | None = Field(None, min_length=1)  # None: start Ray here (or RAY_ADDRESS)
    evidence: Annotated[Literal["auto", "harvey", "choose", "model"], Workspace()] = "auto"
    answer: Annotated[Literal["auto", "evidence", "synthesis"], Workspace()] = "auto"


class OffloadSettings(_Strict):
    enabled: Annotated[bool, Workspace()] = True
    threshold: Annotated[int, Workspace(limit=more_than)] = Field(10_000, ge=100, le=1 << 40)
    preview_lines: Annotated[int, Workspace()] = Field(20, ge=0, le=100_000)


class RagSettings(_Strict):
    """Knowledge-store retrieval (``harvey rag``): the store each turn searches, and how much."""

    active: Annotated[str | None, Workspace()] = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    top_k: Annotated[int, Workspace(limit=more_than)] = Field(5, ge=1, le=50)
    # how sure retrieval must be that a passage is about the prompt before it is sent:
    # the calibrated levels, the unknown-word check at any store size, or none
    # (harvey.knowledge.floor.FLOORS, measured in BENCHMARKS.md)
    floor: Annotated[RagFloor, Workspace(limit=floor_loosened)] = "default"
    budget_pct: Annotated[float, Workspace(limit=more_than)] = Field(15, gt=0, le=90)
    chunk_size_bytes: Annotated[int, Workspace()] = Field(1500, ge=200, le=8000)


class MemorySettings(_Strict):
    """Long-term memory (harvey.memory): recall at session start, mining on exit."""

    enabled: Annotated[bool, Workspace(limit=turned_off)] = True
    budget_pct: Annotated[float, Workspace(limit=more_than)] = Field(
        5.0, gt=0, le=50
    )  # of the context window, at least 512 tokens
    auto_mine_min_turns: Annotated[int, Workspace()] = Field(10, ge=1, le=1_000_000)
    # none (FTS only), local, ollama:MODEL or openai:MODEL: vectors for dedup and recall too
    embedder: Annotated[str, Workspace(no_key_leaves)] = Field(
        "none", pattern=r"^(none|local|(ollama|openai):\S+)$"
    )


class Settings(_Strict):
    backend: Annotated[str, Workspace()] = "auto"  # "auto" or a name in config/choices.py
    model: Annotated[str | None, Workspace(not_a_file)] = None
    base_url: str | None = None
    endpoints: list[EndpointSetting] = Field(default_factory=list)  # a pool, in place of base_url
    # calls the server takes at once when its /slots does not say (harvey.llm.capacity)
    max_in_flight: Annotated[int | None, Workspace(limit=more_than)] = Field(None, ge=1, le=256)
    api_key: Annotated[SecretStr | None, NEVER_IN_WORKSPACE] = (
        None  # a secret type: never in a repr, an error or a dump
    )
    api_key_command: Annotated[str | None, NEVER_IN_WORKSPACE] = Field(
        None, min_length=1
    )  # prints the key on stdout
    num_ctx: Annotated[int | None, Workspace()] = Field(None, ge=256, le=16_777_216)
    context_window: Annotated[int | None, Workspace()] = Field(None, ge=256, le=16_777_216)
    timeout: Annotated[float, Workspace(limit=more_than)] = Field(120.0, gt=0, le=MAX_SECONDS)
    connect_timeout: Annotated[float, Workspace(limit=more_than)] = Field(5.0, gt=0, le=MAX_SECONDS)
    retries: Annotated[int, Workspace(limit=more_than)] = Field(3, ge=0, le=10)
    user: Annotated[str | None, Workspace()] = None
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    session: SessionSettings = Field(default_factory=SessionSettings)
    routes: list[RouteSettings] = Field(default_factory=list)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    analysis: AnalysisSettings = Field(default_factory=AnalysisSettings)
    offload: OffloadSettings = Field(default_factory=OffloadSettings)
    rag: RagSettings = Field(default_factory=RagSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    mcp: McpSettings = Field(default_factory=McpSettings)

    @field_validator("base_url")
    @classmethod
    def _valid_base_url(cls, value: str | None) -> str | None:
        return check_base_url(value)

    @field_validator("backend", mode="before")
    @classmethod
    def _known_backend(cls, value: object) -> str:
        return check_name(value)

    @model_validator(mode="after")
    def _one_way(self) -> Settings:
        _one_way_to_the_server(self.base_url, self.endpoints)
        return self

    @field_validator("routes")
    @classmethod
    def _unique_routes(cls, routes: list[RouteSettings]) -> list[RouteSettings]:
        seen: set[str] = set()
        for route in routes:
            if route.name in seen:
                raise ValueError(f"route name {route.name!r} is used twice")
            seen.add(route.name)
        return routes

    def route(self, name: str) -> RouteSettings | None:
        for route in self.routes:
            if route.name.lower() == name.lower():
                return route
        return None


@dataclass(frozen=True)
class Paths:
    workspace: Path
    harvey_home: Path
    config_file: Path

    @property
    def sessions_db(self) -> Path:
        return self.harvey_home / "sessions.db"

    @property
    def user_config_file(self) -> Path:
        """The user's own settings (trusted, unlike the workspace's ``config_file``)."""
        return self.harvey_home / CONFIG_FILENAME


def default_harvey_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("HARVEY_HOME"):
        return Path(env["HARVEY_HOME"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("harvey", appauthor=False))


def resolve_paths(
    workspace: str | Path | None = None, env: Mapping[str, str] | None = None
) -> Paths:
    ws = Path(workspace or os.getcwd()).expanduser()
    try:
        is_dir = ws.is_dir()
    except (OSError, ValueError) as exc:  # a name too long, an embedded NUL
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"workspace {str(ws)[:80]}: {reason}") from exc
    if not is_dir:
        raise ConfigError(f"workspace {ws} is not a directory")
    ws = ws.resolve()
    home = default_harvey_home(env)
    if os.path.lexists(home) and not os.path.isdir(home):  # a file, a FIFO, a dangling link
        raise ConfigError(f"HARVEY_HOME {home} is not a folder: point it at one (or unset it)")
    return Paths(ws, home, ws / CONFIG_FILENAME)


def _describe(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}"
    if kind == "value_error" and ctx.get("error") is not None:
        return str(ctx["error"])
    return str(error.get("msg", "invalid value"))


#: What a workspace's harvey.yaml may set, read off the fields above (``Workspace``,
#: ``NEVER_IN_WORKSPACE``): the tables ``config/trust.py`` screens a file with.
WORKSPACE_RULES = workspace_rules(Settings)


def _allowed_keys(loc: tuple[int | str, ...]) -> str:
    model: type[BaseModel] = Settings
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            break
        annotation = field.annotation
        inner = getattr(annotation, "__args__", (annotation,))
        found = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if found is None:
            break
        model = found
    return ", ".join(model.model_fields)


def validate(data: dict[str, Any], source: Path | str, text: str | None = None) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        from harvey.config.yaml_text import line_of

        first = exc.errors()[0]
        loc = tuple(first["loc"])
        key = ".".join(str(p) for p in loc) or "(top level)"
        line = line_of(text, loc) if text is not None else None
        where = f" line {line}," if line else ""
        message = f"{source}:{where} key '{key}': {_describe(dict(first))}"
        if first.get("type") == "extra_forbidden":
            message += f" (allowed: {_allowed_keys(loc)})"
        more = len(exc.errors()) - 1
        if more:
            message += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise ConfigError(message) from exc


def load_settings(
    paths: Paths,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    decide: Callable[[Review], bool] | None = None,
) -> Settings:
    """Merge defaults < HARVEY_HOME/harvey.yaml < workspace harvey.yaml < environment <
    flags, then validate. An untrusted workspace file that would widen anything is
    refused (``ConfigError``) unless ``decide`` says to apply it (True) or to keep
    only its narrowing part (False); see ``harvey.config.layers``."""
    from harvey.config.layers import load_layers  # below this module: it is handed validate

    return load_layers(paths, validate, overrides, env, decide)


def configured_keys(settings: Settings) -> list[str]:
    """The API keys these settings hold (top level and every route), for the redactor:
    the caller hands them to ``Redactor.from_env``, so redaction needs no settings."""
    keys = [settings.api_key, *(route.api_key for route in settings.routes)]
    return [k.get_secret_value() for k in keys if k is not None]


def base_url_for(backend: str, settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """The endpoint for a backend: flag/config first, then the backend's own env var."""
    env = os.environ if env is None else env
    if settings.base_url:
        return settings.base_url
    if backend == "ollama":
        host = env.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
        return host if "://" in host else f"http://{host}"
    if backend == "openai":
        return env.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
    return "embedded"
