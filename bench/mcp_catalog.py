"""Three MCP servers of forty tools each, described as real servers describe theirs, and a
request for each tool worded the way a person asks (not the tool's own words).

Used by ``bench/bench_mcp_schemas.py`` and ``tests/mcp/test_many_tools.py``: the tokens a
request spends on schemas, up front against behind ``find_tools``, and whether the tool
a request needs is among what ``find_tools`` returns for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: server → (object, its fields, what a person calls it); each object gets five verbs.
OBJECTS: dict[str, list[tuple[str, tuple[str, ...], str]]] = {
    "issues": [
        ("issue", ("repository", "title", "body"), "bug report"),
        ("comment", ("issue_number", "body"), "reply on an issue"),
        ("label", ("repository", "name", "color"), "issue label"),
        ("milestone", ("repository", "title", "due_date"), "milestone"),
        ("pull_request", ("repository", "head", "base"), "pull request"),
        ("branch", ("repository", "name", "from_ref"), "git branch"),
        ("release", ("repository", "tag", "notes"), "release"),
        ("webhook", ("repository", "url", "events"), "webhook"),
    ],
    "calendar": [
        ("event", ("calendar_id", "start", "end", "summary"), "meeting"),
        ("attendee", ("event_id", "email"), "meeting guest"),
        ("reminder", ("event_id", "minutes_before"), "reminder"),
        ("calendar", ("name", "timezone"), "calendar"),
        ("room", ("building", "capacity"), "meeting room"),
        ("availability", ("email", "day"), "free time"),
        ("recurrence", ("event_id", "rule"), "repeating schedule"),
        ("holiday", ("country", "year"), "public holiday"),
    ],
    "database": [
        ("table", ("schema", "name", "columns"), "table"),
        ("row", ("table", "values"), "record"),
        ("index", ("table", "columns"), "index"),
        ("backup", ("database", "destination"), "backup"),
        ("user", ("name", "role"), "database user"),
        ("view", ("name", "query"), "saved view"),
        ("migration", ("version", "script"), "schema migration"),
        ("connection", ("host", "port"), "connection"),
    ],
}
#: verb → (how the tool's description says it, how a person asks for it)
VERBS = {
    "create": ("Create a new {obj}", "please create a {ask} for me"),
    "list": ("List every {obj}", "list all of them: every {ask} we have"),
    "get": ("Get one {obj} by its id, with all its details", "get the details of a {ask}"),
    "update": ("Update the fields of an existing {obj}", "update the {ask}, its fields changed"),
    "delete": ("Delete a {obj} permanently", "delete that {ask}, we no longer need it"),
}


@dataclass(frozen=True)
class CatalogTool:
    server: str
    name: str
    description: str
    schema: dict[str, Any]
    request: str  # how a person asks for what this tool does


def catalog() -> list[CatalogTool]:
    """The 120 tools, each with its request."""
    tools = []
    for server, objects in OBJECTS.items():
        for obj, fields, ask in objects:
            words = obj.replace("_", " ")
            for verb, (says, asks) in VERBS.items():
                properties = {
                    f: {"type": "string", "description": f"The {f.replace('_', ' ')}."}
                    for f in (fields if verb in ("create", "update") else fields[:1])
                }
                if verb in ("get", "update", "delete"):
                    properties["id"] = {"type": "string", "description": f"The {words}'s id."}
                schema = {"type": "object", "properties": properties, "required": list(properties)}
                description = (
                    says.format(obj=words) + f" in the {server} service. Returns the {words} as "
                    "JSON, or an error naming the field that was wrong."
                )
                tools.append(
                    CatalogTool(server, f"{verb}_{obj}", description, schema, asks.format(ask=ask))
                )
    return tools
