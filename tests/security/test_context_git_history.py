"""anything → model context, through git's history: a secret file that was ever committed
(``.env``, a deploy key) is still in git's objects after it is deleted or hidden from the
sandbox's view. No git command that runs unasked may print it; the attacks are the ways
git prints a file: patches, diffs, greps, ``REV:PATH``, blame, a blob by its id, the
index, and the options that would turn the exclusions off."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harvey.confine import git_policy, git_secrets
from harvey.tools.registry import ToolContext
from harvey.tools.shell import run_command
from harvey.workspace.secret_files import SecretFiles
from tests.security.conftest import Attack
from tests.security.test_commands_confinement import git, landlock, trust

__all__ = ["landlock"]  # the autouse fixture: these run under Landlock too

ENV_VALUE = "PLAINSECRET-dotenv-7f3a9c"
KEY_VALUE = "PLAINSECRET-deploykey-b41d"
VAULT_VALUE = "PLAINSECRET-vault-90aa"
SSH_VALUE = "PLAINSECRET-sshconfig-c0de"
SECRETS = (ENV_VALUE, KEY_VALUE, VAULT_VALUE, SSH_VALUE)


def _blob(repo: Path, rev: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", rev], capture_output=True, text=True, check=True
    ).stdout.strip()


def _make_history(ws: Path) -> Path:
    """A repository whose first commit holds ``.env``, a deploy key, ``.ssh/config`` and a
    ``*.vault`` file (a secret by the workspace's own ``security.secret_files``); the
    second deletes ``.env`` and changes the others, the working tree changes them again."""
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("one\n")
    (ws / ".env").write_text(f"VALUE={ENV_VALUE}\n")
    (ws / "deploy").mkdir()
    (ws / "deploy" / "id_ed25519").write_text(f"{KEY_VALUE}\n")
    (ws / "prod.vault").write_text(f"{VAULT_VALUE}\n")
    (ws / "home" / ".ssh").mkdir(parents=True)
    (ws / "home" / ".ssh" / "config").write_text(f"{SSH_VALUE}\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "first")
    git(ws, "tag", "light", "HEAD:.env")  # a tag may point at a blob, or at a tag of one
    git(ws, "tag", "-a", "-m", "m", "annotated", "HEAD:deploy/id_ed25519")
    git(ws, "rm", "-q", ".env")
    (ws / "a.txt").write_text("two\n")
    (ws / "deploy" / "id_ed25519").write_text(f"{KEY_VALUE}-2\n")
    (ws / "prod.vault").write_text(f"{VAULT_VALUE}-2\n")
    (ws / "home" / ".ssh" / "config").write_text(f"{SSH_VALUE}-2\n")
    git(ws, "commit", "-qam", "second")
    (ws / "deploy" / "id_ed25519").write_text(f"{KEY_VALUE}-3\n")
    (ws / "prod.vault").write_text(f"{VAULT_VALUE}-3\n")
    git(ws, "add", "deploy")  # the index holds a third version of the key
    return ws


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repository for the commands that only read it (built once: 80 tests)."""
    ws = tmp_path_factory.mktemp("history") / "ws"
    ws.mkdir()
    return _make_history(ws)


def _ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws, allowed_commands=("git",), secret_files=("*.vault",))


ATTACKS = [
    "git log -p",
    "git log -p --all --full-history",
    "git log -p -- .env",
    "git log -p -- deploy prod.vault",
    "git log -p -S PLAINSECRET",
    "git log -p -G PLAINSECRET --all",
    "git log --format=%H -p HEAD~1",
    "git whatchanged -p",
    "git show HEAD~1",
    "git show HEAD~1 -- .env",
    "git show HEAD~1:.env",
    "git show HEAD~1:./.env",
    "git show HEAD~1:deploy/../.env",
    "git show HEAD~1^{tree}:.env",
    "git show HEAD:prod.vault",
    "git show :deploy/id_ed25519",
    "git show :0:deploy/id_ed25519",
    "git show BLOB_ENV",
    "git show BLOB_KEY_SHORT",
    "git diff HEAD~1",
    "git diff HEAD~1 HEAD",
    "git diff HEAD~1 HEAD -- .env deploy",
    "git diff --cached",
    "git diff --cached HEAD~1",
    "git diff",
    "git diff BLOB_ENV BLOB_A",
    "git diff-tree -p -r HEAD~1 HEAD",
    "git diff-tree -p -r --root HEAD~1",
    "git diff-index -p HEAD~1",
    "git diff-index -p --cached HEAD~1",
    "git diff-files -p",
    "git grep PLAINSECRET HEAD~1",
    "git grep -e PLAINSECRET --cached",
    "git grep PLAINSECRET",
    "git grep PLAINSECRET BLOB_ENV",
    "git blame HEAD~1 -- .env",
    "git annotate HEAD~1 -- .env",
    "git blame deploy/id_ed25519",
    "git log -L1,1:.env HEAD~1",
    "git log -L 1,1:prod.vault",
    "git log --follow -p -- .env",
    "git log --follow -p -- *.vault",
    "git cat-file -p HEAD~1:.env",
    "git cat-file --batch-all-objects --batch",
    "git --literal-pathspecs log -p",
    "git --noglob-pathspecs log -p",
    "git log -p --submodule=diff",
    "git grep --recurse-submodules PLAINSECRET HEAD~1",
    "git -P log -p --all",
    # a folder's tree: paths relative to it no longer show that .ssh/config is secret
    "git diff HEAD~1:home/.ssh HEAD:home/.ssh",
    "git diff HEAD~1:home HEAD:home",
    "git grep PLAINSECRET HEAD~1:home/.ssh",
    "git grep PLAINSECRET HEAD:home",
    "git diff-tree -p TREE_SSH_OLD TREE_SSH",
    "git show TREE_SSH",
    "git grep PLAINSECRET TREE_SSH",
    "git diff TREE_SSH_OLD^{tree} TREE_SSH^{tree}",
    # tags that point at a secret's blob
    "git show light",
    "git show annotated",
    "git grep PLAINSECRET light",
    "git diff light BLOB_A",
    # words after "--" are paths: they must not turn the exclusions off
    "git log -p -- -Lx .",
    "git log -p -- --follow .",
    "git log -p -- --no-index .",
    "git show HEAD~1 -- -L .",
    "git diff HEAD~1 -- --no-index .",
    "git grep -e PLAINSECRET HEAD~1 -- --no-index .",
    # --follow on a folder, --full-diff, objects no argument names
    "git log --follow -p -- .",
    "git log --follow -p deploy",
    "git log -p --full-diff",
    "git log -p --full-d",
    "git show --full-diff HEAD~1",
    "git diff-tree -p -r --full-diff HEAD~1 HEAD",
    "git show --indexed-objects",
    "git show --all",
    "git show --tags",
    "git show --glob=refs/tags/l*",
    "git grep --recurse-sub PLAINSECRET HEAD",
    # a path under a tree rather than a commit; the staged diff; a ref's raw object
    "git show TREE_SSH_OLD:config",
    "git grep PLAINSECRET TREE_SSH_OLD:config",
    "git status -v",
    "git status -sv",
    "git status --verbose",
    "git for-each-ref --format=%(raw) refs/tags",
    "git for-each-ref --format=%(*raw) refs/tags",
    "git --no-pager show --stat -p HEAD~1",
]


@pytest.mark.parametrize("command", ATTACKS)
def test_no_unasked_git_command_prints_a_committed_secret(history: Path, command: str) -> None:
    objects = {
        "BLOB_ENV": _blob(history, "HEAD~1:.env"),
        "BLOB_KEY_SHORT": _blob(history, "HEAD~1:deploy/id_ed25519")[:8],
        "BLOB_A": _blob(history, "HEAD:a.txt"),
        "TREE_SSH_OLD": _blob(history, "HEAD~1:home/.ssh"),
        "TREE_SSH": _blob(history, "HEAD:home/.ssh"),
    }
    for name, value in objects.items():
        command = command.replace(name, value)
    result = run_command(_ctx(history), command)
    seen = f"{result.output}\n{result.problem}"
    assert not any(secret in seen for secret in SECRETS), (command, seen)


@pytest.mark.parametrize(
    ("command", "shows"),
    [
        ("git log -p", "+two"),
        ("git show HEAD~1:a.txt", "one"),
        ("git show HEAD", "+two"),
        ("git diff HEAD~1 a.txt", "+two"),
        ("git diff HEAD~1 HEAD", "+two"),
        ("git log -L1,1:a.txt", "+two"),
        ("git blame a.txt", "two"),
        ("git grep -n one HEAD~1", "a.txt:1:one"),
        ("git ls-tree -r --name-only HEAD~1", ".env"),
        ("git show :a.txt", "two"),  # the index form, judged by its path
        ("git status -s", "prod.vault"),  # names, not contents
        ("git log -p -- a.txt", "+two"),
        ("git ls-files", "deploy/id_ed25519"),
    ],
)
def test_git_still_reads_everything_else_unasked(history: Path, command: str, shows: str) -> None:
    result = run_command(_ctx(history), command)
    assert result.ran and result.exit_code == 0, (command, result)
    assert shows in result.output, (command, result.output)


@pytest.mark.parametrize(
    "command",
    [
        "git show HEAD^{tree}",  # a tree: its paths are relative to a folder
        "git grep -n one HEAD~1:",
        "git diff HEAD~1^{tree} HEAD^{tree}",
        "git annotate a.txt",  # not in the table (blame is)
        "git whatchanged -p",
        "git for-each-ref",
        "git cat-file -t HEAD",
    ],
)
def test_forms_outside_the_table_ask(history: Path, command: str) -> None:
    """The table names the read-only forms; anything else asks, however harmless."""
    result = run_command(_ctx(history), command)
    assert not result.ran and "refused" in result.problem, (command, result)


def test_the_exclusions_follow_the_secret_file_rule() -> None:
    rule = SecretFiles(["*.vault", "config/prod.yml"])
    specs = git_secrets.excluded_pathspecs(rule)
    assert ":(exclude,glob,icase)**/.env*" in specs
    assert ":(exclude,glob,icase)**/*.vault" in specs
    assert ":(exclude,glob,icase)**/config/prod.yml" in specs
    assert ":(exclude,glob,icase)**/.ssh/**" in specs
    # appended after the model's own arguments; not where git takes one path only
    neutral = list(git_policy.NEUTRAL)
    argv = ["git", "-P", "log", "-p", "--", "a.txt"]
    assert git_policy.neutralised(argv, rule) == ["git", *neutral, *argv[1:], *specs]
    # a "-L" or "--no-index" after "--" is a path: the exclusions still go on
    words = ["git", "log", "-p", "--", "-L", "--no-index"]
    assert git_policy.neutralised(words, rule) == ["git", *neutral, *words[1:], *specs]
    for unchanged in (
        ["git", "log", "-L1,2:a.txt"],
        ["git", "diff", "--no-index", "a", "b"],
        ["git", "status"],
        ["git", "blame", "a.txt"],
    ):
        assert git_policy.neutralised(unchanged, rule) == ["git", *neutral, *unchanged[1:]]


@pytest.mark.slow  # harvey run in a subprocess
def test_harvey_run_sends_the_model_no_committed_secret(
    victim_workspace: Path, attack: Attack
) -> None:
    history = _make_history(victim_workspace)
    (history / "harvey.yaml").write_text(
        "security:\n  allowed_commands: [git]\n  secret_files: ['*.vault']\n"
    )
    result = attack(
        [
            ("run_shell", {"command": "git log -p --all"}),
            ("run_shell", {"command": "git show HEAD~1:.env"}),
            ("run_shell", {"command": f"git show {_blob(history, 'HEAD~1:.env')}"}),
            ("run_shell", {"command": "git grep PLAINSECRET HEAD~1"}),
            ("run_shell", {"command": "git diff --cached HEAD~1"}),
        ],
        *trust(),
    )
    assert result.proc.returncode == 0, result.proc.stderr
    sent = "\n".join(str(r) for r in result.requests) + result.proc.stdout + result.proc.stderr
    assert not any(secret in sent for secret in SECRETS)
    assert "+two" in result.tool_outputs[0]  # the history itself was read
    assert "refused" in result.tool_outputs[1] and "secret file" in result.tool_outputs[1]
