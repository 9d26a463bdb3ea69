"""The tool tests' fixtures (a real temporary workspace, resolved, and a tool context)."""

from tests.tools.conftest import ctx, workspace

__all__ = ["ctx", "workspace"]
