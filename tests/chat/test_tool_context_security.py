"""The agent hands ``security.limits``, ``unix_sockets`` and ``secret_files`` to every command."""

from __future__ import annotations

from pathlib import Path

from harvey.config.settings import LimitsSettings, SecuritySettings, Settings
from harvey.tools.shell import run_command

from .conftest import AgentFactory


def test_the_security_settings_reach_the_commands(
    make_agent: AgentFactory, workspace: Path
) -> None:
    limits = LimitsSettings(processes=64, file_size_mb=1, cpu_seconds=5, memory_mb=512)
    security = SecuritySettings(
        allowed_commands=["cat", "sh"], limits=limits, unix_sockets=True, secret_files=["*.yml"]
    )
    agent = make_agent(["done"], settings=Settings(security=security))
    ctx = agent.tool_context()
    assert ctx.limits == limits and ctx.unix_sockets and ctx.secret_files == ("*.yml",)
    (workspace / "vault.yml").write_text("hidden-value\n")
    read = run_command(ctx, "cat vault.yml")
    assert "hidden-value" not in read.output and "Permission denied" in read.output
    (workspace / "big.sh").write_text('head -c 3000000 /dev/zero > "$TMPDIR/big"\n')
    big = run_command(ctx, "sh big.sh")
    assert "File too large" in big.output, big.output
