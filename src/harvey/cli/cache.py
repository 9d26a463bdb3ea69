"""``harvey cache``: what Harvey keeps to answer faster, and emptying it.

A document asked about is indexed once (its sentences, their vectors) and kept under
``HARVEY_HOME/cache/indexes`` for the next question; the embedder's converted weights
are under ``cache/models``. Both are rebuilt when missing, so clearing loses only time.
"""

from __future__ import annotations

import click

from harvey.cli.errors import handle_errors


def _size(count: int) -> str:
    return f"{count / 1_000_000:.1f} MB" if count >= 100_000 else f"{count:,} bytes"


@click.group()
def cache() -> None:
    """Show or clear what Harvey keeps to answer faster (document indexes)."""


@cache.command("info")
@handle_errors
def cache_info() -> None:
    """Show how many document indexes are kept, and their size."""
    from harvey.analysis.doc_index import cache_usage
    from harvey.config.settings import default_harvey_home

    home = default_harvey_home()
    files, size = cache_usage(home)
    click.echo(
        f"{files} document index{'es' if files != 1 else ''}, {_size(size)}, in "
        f"{home / 'cache' / 'indexes'}"
    )


@cache.command("clear")
@handle_errors
def cache_clear() -> None:
    """Remove every kept document index (they are rebuilt when next needed)."""
    from harvey.analysis.doc_index import clear_cache
    from harvey.config.settings import default_harvey_home

    files, size = clear_cache(default_harvey_home())
    click.echo(f"removed {files} document index{'es' if files != 1 else ''} ({_size(size)})")
