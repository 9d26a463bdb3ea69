"""git's one table of read-only forms: whatever it does not name asks, and so does every
refused option on every form, however it is spelled."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvey.confine.git_policy import FORMS, REFUSED, check_git

SUBCOMMANDS = sorted(FORMS)


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_form_refuses_every_option_that_runs_a_program_or_reaches_past(
    tmp_path: Path, command: str
) -> None:
    for option, why in (*REFUSED.items(), *FORMS[command].refuses.items()):
        spellings = (
            [option, f"{option}=x"] if option.startswith("--") else [option, f"-n{option[1]}"]
        )
        if option.startswith("--") and len(option) > 5:
            spellings.append(option[:-1])  # git takes a unique prefix
        for spelled in spellings:
            problem = check_git([command, spelled], tmp_path)
            assert problem is not None, (command, spelled)
            if FORMS[command].only is None:
                assert why in problem, (command, spelled, problem)


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_after_a_double_dash_an_option_is_a_path(tmp_path: Path, command: str) -> None:
    if FORMS[command].only is not None:
        assert check_git([command, "--", "--ext-diff"], tmp_path) is not None
    else:
        assert check_git([command, "--", "--ext-diff"], tmp_path) is None


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.from_regex(r"[a-z][a-z-]{1,14}", fullmatch=True).filter(lambda c: c not in FORMS))
def test_a_subcommand_the_table_does_not_name_asks(tmp_path: Path, command: str) -> None:
    problem = check_git([command], tmp_path)
    assert problem is not None and "not a read-only git command" in problem


@pytest.mark.parametrize(
    ("args", "asks"),
    [
        (["branch"], False),
        (["branch", "--sort=-committerdate", "-a"], False),
        (["branch", "topic"], True),  # creates a branch
        (["branch", "--", "topic"], True),
        (["branch", "-m", "a", "b"], True),
        (["tag", "-l"], False),
        (["tag", "v1"], True),
        (["status", "-sv"], True),  # the staged diff, in a cluster
        (["status", "-s"], False),
        (["show", "--al"], True),  # --all, abbreviated
        (["log", "--all", "-p"], False),  # excluded by pathspec: only show/diff/grep refuse it
        (["--literal-pathspecs", "log"], True),
        (["--no-pager", "-P", "log"], False),
    ],
)
def test_listing_forms_and_per_form_refusals(tmp_path: Path, args: list[str], asks: bool) -> None:
    assert (check_git(args, tmp_path) is not None) is asks
