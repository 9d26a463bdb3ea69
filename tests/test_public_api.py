"""The public surface in ``harvey.__all__`` cannot drift from what really imports.

A name listed in ``__all__`` but gone from the package (renamed, moved, made
lazy and mistyped) fails here instead of in a user's ``from harvey import X``.
The names a program needs to drive Harvey itself — the agent, the runtime that
wires it up, the client factory — must stay on that list.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import harvey

REQUIRED = ("Agent", "open_runtime", "make_client", "HarveyError", "__version__")


@pytest.mark.parametrize("name", harvey.__all__)
def test_every_public_name_imports(name: str) -> None:
    assert getattr(harvey, name) is not None


def test_all_has_no_duplicates() -> None:
    assert len(harvey.__all__) == len(set(harvey.__all__))


@pytest.mark.parametrize("name", REQUIRED)
def test_the_entry_points_are_public(name: str) -> None:
    assert name in harvey.__all__


def test_the_entry_points_are_the_real_ones() -> None:
    from harvey.chat.agent import Agent
    from harvey.chat.runtime import open_runtime
    from harvey.llm.factory import make_client

    assert harvey.Agent is Agent
    assert harvey.make_client is make_client
    assert harvey.open_runtime is open_runtime


def test_star_import_in_a_fresh_interpreter() -> None:
    """``from harvey import *`` binds every listed name (a lazy ``__getattr__`` too)."""
    code = (
        "import harvey\n"
        "ns = {}\n"
        "exec('from harvey import *', ns)\n"
        "missing = sorted(set(harvey.__all__) - set(ns))\n"
        "assert not missing, missing\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
