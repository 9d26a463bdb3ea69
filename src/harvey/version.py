"""Which Harvey this is: the installed distribution's version, asked for only when shown."""

from __future__ import annotations


def installed_version() -> str:
    """``harvey-agent``'s version, or ``0.0.0`` from a source tree that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("harvey-agent")
    except PackageNotFoundError:
        return "0.0.0"
