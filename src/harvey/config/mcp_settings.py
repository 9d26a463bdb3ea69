"""``mcp:`` in ``harvey.yaml``: the Model Context Protocol servers whose tools Harvey may
offer the model, and the share of the window their schemas may take.

A server is a program spoken to over stdio (``command``, ``args``) or a Streamable HTTP
URL. Nothing of the user's environment reaches a server unless its entry names the
variable (``env``); an HTTP server's bearer token comes from a variable (``token_env``)
or a command (``token_command``, the user's own file only). A workspace's servers widen
(they run code): they apply only once the file is trusted, and then each server still
asks, by the hash of what it runs (``harvey.mcp``). Running unconfined (``confine:
false``) and letting ``harvey run`` call a server's tools unasked (``allow``) are the
user's own decisions: a workspace file never makes them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harvey.config.field_trust import NEVER_IN_WORKSPACE, Workspace, more_than
from harvey.config.urls import check_base_url

SERVER_NAME = r"^[A-Za-z0-9_-]{1,48}$"  # and no "__": it separates mcp__SERVER__TOOL
VARIABLE_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, hide_input_in_errors=True, allow_inf_nan=False
    )


class McpServerSettings(_Strict):
    """One server of ``mcp.servers``: ``command`` (stdio) or ``url`` (Streamable HTTP)."""

    command: str | None = Field(None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: list[Annotated[str, Field(pattern=VARIABLE_NAME)]] = Field(default_factory=list)
    url: str | None = None
    token_env: str | None = Field(None, pattern=VARIABLE_NAME)
    token_command: Annotated[str | None, NEVER_IN_WORKSPACE] = Field(None, min_length=1)
    confine: Annotated[bool, NEVER_IN_WORKSPACE] = True
    network: bool = False  # a confined stdio server may reach the network
    reads: list[str] = Field(default_factory=list)  # folders it may read besides the system's
    writes: list[str] = Field(default_factory=list)  # folders it may write besides its scratch
    #: the most seconds the person waits for one call or listing (every page of it), the
    #: server's start included: never twice that
    timeout: float = Field(60.0, gt=0, le=3600)

    @field_validator("url")
    @classmethod
    def _valid_url(cls, value: str | None) -> str | None:
        return check_base_url(value)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give command (a stdio server) or url (an HTTP server), not both")
        if self.url is None and (self.token_env or self.token_command):
            raise ValueError("a bearer token (token_env, token_command) is for a url server")
        if self.token_env and self.token_command:
            raise ValueError("give token_env or token_command, not both")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


class McpSettings(_Strict):
    servers: dict[Annotated[str, Field(pattern=SERVER_NAME)], McpServerSettings] = Field(
        default_factory=dict
    )
    #: the share of the window all tool schemas may take before they are found on demand
    schema_budget: Annotated[float, Workspace(limit=more_than)] = Field(0.10, gt=0, le=1)
    #: the most tools one server may list, and the most bytes its listing may take (every
    #: page together): past either the server is refused in one line. A workspace's file
    #: may lower them; a higher value there widens (it waits for the user's trust).
    max_tools: Annotated[int, Workspace(limit=more_than)] = Field(1000, ge=1, le=100_000)
    max_listing_bytes: Annotated[int, Workspace(limit=more_than)] = Field(
        4 << 20, ge=1024, le=64 << 20
    )
    #: ``SERVER`` or ``SERVER:TOOL``: called in ``harvey run`` without ``--allow-mcp``
    allow: Annotated[list[str], NEVER_IN_WORKSPACE] = Field(default_factory=list)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in servers:
            if "__" in name:
                raise ValueError(f"server name {name!r}: no '__' (it separates mcp__SERVER__TOOL)")
        return servers
