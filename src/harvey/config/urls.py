"""A server URL a setting names, checked while the settings load."""

from __future__ import annotations

from urllib.parse import urlsplit


def check_base_url(value: str | None) -> str | None:
    """A server URL must be ``http(s)://host...``: anything else fails at the first request.

    Checked while loading, so ``--base-url "not a url"`` is a usage error
    (exit 2) before a client, a session or a recording exists.
    """
    if value is None:
        return None
    try:
        parts = urlsplit(value)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        valid = valid and (parts.port is None or parts.port >= 0)  # a bad port raises
    except ValueError:
        valid = False
    if not valid:
        raise ValueError(f"must be an http:// or https:// URL with a host, not {value!r}")
    return value
