"""workspace_view: the grants never cover a secret file, and cover every other one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvey.confine.git_policy import check_git
from harvey.workspace import view as wv
from harvey.workspace.secret_files import SecretFiles
from harvey.workspace.view import WorkspaceTooBig, WorkspaceView, workspace_view

NAMES = st.sampled_from(
    ["a.txt", ".env", "notes.md", "id_rsa", "x.pem", "src", "deep", ".ssh", "b", ".env.local"]
)
TREES = st.lists(st.lists(NAMES, min_size=1, max_size=4), min_size=1, max_size=12)


def beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def readable(view: WorkspaceView, path: str) -> bool:
    """Whether the grants give read access to the file at ``path`` (Landlock's rule:
    a file is readable when it, or a folder above it, has a read rule)."""
    return path in view.files or any(beneath(path, folder) for folder in view.whole)


def build(root: Path, paths: list[list[str]]) -> set[str]:
    """Make files at the given paths (a name used as a folder stays a folder)."""
    made: set[str] = set()
    for parts in paths:
        target = root.joinpath(*parts)
        if target.is_dir() or any(
            root.joinpath(*parts[:i]).is_file() for i in range(1, len(parts))
        ):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x\n")
        made.add(str(target))
    return made


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(paths=TREES)
def test_grants_cover_every_file_but_the_secret_ones(tmp_path_factory, paths) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("ws")
    made = build(root, paths)
    secrets = SecretFiles()
    view = workspace_view(root, secrets)
    real = os.path.realpath(root)
    for path in made:
        secret = secrets.matches(os.path.relpath(path, real))
        assert readable(view, path) is not secret, (path, view)
    for folder in view.split:  # a folder only listed is one holding a secret below it
        assert any(beneath(s, folder) for s in view.hidden)


def test_a_workspace_without_secrets_is_one_rule(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x\n")
    assert workspace_view(tmp_path, SecretFiles()) == WorkspaceView.everything(str(tmp_path))


def test_hard_links_and_configured_patterns_are_secrets(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("k\n")
    os.link(tmp_path / ".env", tmp_path / "copy.txt")
    (tmp_path / "vault.yml").write_text("k\n")
    view = workspace_view(tmp_path, SecretFiles(["vault.yml"]))
    assert {os.path.basename(p) for p in view.secrets} == {".env", "copy.txt", "vault.yml"}
    assert not any(readable(view, str(tmp_path / n)) for n in (".env", "copy.txt", "vault.yml"))


def test_git_objects_are_not_walked(tmp_path: Path) -> None:
    objects = tmp_path / ".git" / "objects" / "ab"
    objects.mkdir(parents=True)
    for i in range(30):
        (objects / f"{i:038x}").write_text("x")
    (tmp_path / ".env").write_text("k\n")
    view = workspace_view(tmp_path, SecretFiles(), max_entries=20)
    assert any(beneath(str(objects), folder) for folder in view.whole)


def test_the_walk_fails_closed(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"f{i}").write_text("x\n")
    with pytest.raises(WorkspaceTooBig, match="more than 10 entries"):
        workspace_view(tmp_path, SecretFiles(), max_entries=10)
    (tmp_path / ".env").write_text("k\n")
    with pytest.raises(WorkspaceTooBig, match="rules"):
        workspace_view(tmp_path, SecretFiles(), max_rules=10)
    assert wv.MAX_ENTRIES >= 10_000


@pytest.mark.parametrize(
    ("args", "asks"),
    [
        (["status"], False),
        (["--no-pager", "log", "--oneline", "-p"], False),
        (["branch", "-a"], False),
        (["branch", "-D", "main"], True),
        (["-c", "x=y", "status"], True),
        (["-cx=y", "status"], True),
        (["--config-env=core.pager=X", "log"], True),
        (["-C", "/", "log"], True),
        (["stash"], True),
        (["log", "--ext-diff"], True),
        (["log", "--ext-d"], True),
        (["diff", "--textconv"], True),
        (["grep", "-nO", "x"], True),
        (["grep", "--open-files", "x"], True),
        (["log", "--", "--ext-diff"], False),  # a path after "--"
        (["submodule", "foreach", "sh"], True),
        (["difftool"], True),
        (["fetch"], True),
    ],
)
def test_git_check(tmp_path: Path, args: list[str], asks: bool) -> None:
    assert (check_git(args, tmp_path) is not None) is asks


def test_node_modules_is_granted_without_a_walk(tmp_path: Path) -> None:
    package = tmp_path / "node_modules" / "pkg" / "test"
    package.mkdir(parents=True)
    for i in range(30):
        (package / f"f{i}.js").write_text("x")
    (tmp_path / ".env").write_text("k\n")
    view = workspace_view(tmp_path, SecretFiles(), max_entries=20)
    assert str(tmp_path / "node_modules") in view.whole
    (tmp_path / "node_modules").rename(tmp_path / "real")
    (tmp_path / "node_modules").symlink_to(tmp_path)  # a link by that name grants nothing
    view = workspace_view(tmp_path, SecretFiles(), max_entries=200)
    assert not any(beneath(str(tmp_path / ".env"), folder) for folder in view.whole)


def reference_matches(secrets: SecretFiles, relative: str) -> bool:
    """SecretFiles.matches as first written, pattern by pattern with fnmatchcase."""
    import fnmatch
    import unicodedata

    def fold(text: str) -> str:
        return unicodedata.normalize("NFKC", text).casefold()

    parts = [fold(p) for p in relative.split("/") if p not in ("", ".")]
    if not parts:
        return False
    if any(part in secrets._folders for part in parts[:-1]):
        return True
    if any(fnmatch.fnmatchcase(parts[-1], p) for p in secrets._names):
        return True
    joined = "/".join(parts)
    return any(
        fnmatch.fnmatchcase(joined, p) or fnmatch.fnmatchcase(joined, "*/" + p)
        for p in secrets._paths
    )


@given(
    st.lists(
        st.sampled_from(["a", ".env", ".ENV", "x.pem", ".kube", "config", "id_rsa.pub", "k", "é"])
        | st.text(alphabet="ab.*?[]/\n", max_size=6),
        min_size=1,
        max_size=4,
    )
)
def test_compiled_secret_patterns_match_as_fnmatch_does(parts: list[str]) -> None:
    secrets = SecretFiles(["vault.*", "deploy/*.yml", "[ab]?"])
    relative = "/".join(parts)
    assert secrets.matches(relative) == reference_matches(secrets, relative)
