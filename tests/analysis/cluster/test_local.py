"""The environment and the address of a Ray that Harvey starts here, without starting one.

The real start is attacked in ``tests/security/test_network_ray.py``; these
check the rules it relies on: which names and values count as secrets, that
the scrubbed environment is put back afterwards, and that a Ray which took a
non-loopback address is refused.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.analysis.cluster.local import (
    KEPT_PREFIX,
    SINGLE_MACHINE_VAR,
    assert_loopback,
    is_loopback,
    is_secret_name,
    local_start,
    ray_environment,
)
from harvey.errors import ClusterError
from harvey.redact import Redactor, install, reset

SECRET_NAMES = [
    "OPENAI_API_KEY",
    "OPENAI_API_KEY_PROD",  # the suffix rule missed it
    "openai_api_key",  # case
    "GH_PAT",
    "PAT",
    "AZURE_DEVOPS_PAT_2",
    "db_password",
    "MYSQL_PWD_PASSWD",
    "GPG_PASSPHRASE",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "NPM_AUTH",
    "SSH_AUTH_SOCK",  # the ssh agent is a credential too
    "HF_TOKEN",
    "ANTHROPIC_API_KEY",
    "MONKEY_BUSINESS",  # wide on purpose: a Ray worker does not miss it
    "GH_PAT2",
]
PLAIN_NAMES = ["PATH", "PYTHONPATH", "HOME", "LANG", "GIT_AUTHOR_NAME", "RAY_TMPDIR", "TERM"]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_names_that_hold_secrets(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_names_that_do_not(name: str) -> None:
    assert not is_secret_name(name)


names = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789abcxyz", max_size=12)


SECRET_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL")


@given(names, st.sampled_from(SECRET_PARTS), names)
def test_a_secret_part_anywhere_in_any_case_is_a_secret_name(
    before: str, part: str, after: str
) -> None:
    assert is_secret_name(before + part + after)
    assert is_secret_name((before + part + after).lower())


def test_the_environment_loses_secrets_by_name_and_by_value() -> None:
    install(Redactor(["plain-configured-key-4242"]))  # as the CLI does from the settings
    try:
        env = ray_environment(
            {
                "PATH": "/usr/bin",
                "OPENAI_API_KEY": "sk-abcdefghijklmnopqrstuvwxyz0123",
                "GH_PAT": "not-token-shaped-but-named",
                "BUILD_NOTE": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",  # a token shape
                "LLM_SETTING": "plain-configured-key-4242",  # the configured key, renamed
                "LLM_SETTINGS": "prefix plain-configured-key-4242 suffix",  # ... and inside
                "HTTPS_PROXY": "http://user:hunter2pass@proxy:3128",  # a password in a URL
                "RAY_AUTH_TOKEN": "the-cluster-own-token-value",  # Ray's own, needed
                "VISIBLE": "ordinary value",
            }
        )
    finally:
        reset()
    assert env == {
        "PATH": "/usr/bin",
        "RAY_AUTH_TOKEN": "the-cluster-own-token-value",
        "VISIBLE": "ordinary value",
        SINGLE_MACHINE_VAR: "0",
    }


@given(st.dictionaries(names, st.text(max_size=20), max_size=8))
def test_no_value_a_mask_flags_survives(environ: dict[str, str]) -> None:
    def masks(value: str) -> bool:
        return "x" in value

    env = ray_environment(environ, masks)
    assert env[SINGLE_MACHINE_VAR] == "0"
    for name, value in env.items():
        if name != SINGLE_MACHINE_VAR and not name.startswith(KEPT_PREFIX):
            assert not masks(value) and not is_secret_name(name)
            assert environ[name] == value  # kept as it was, never rewritten


def _fake_ray(mode: bool = True) -> Any:
    return SimpleNamespace(
        _private=SimpleNamespace(ray_constants=SimpleNamespace(ENABLE_RAY_CLUSTER=mode))
    )


def test_local_start_scrubs_while_ray_starts_and_puts_everything_back() -> None:
    ray = _fake_ray()
    environ = {"PATH": "/bin", "OPENAI_API_KEY": "sk-abcdefghijklmnopqrstuvwxyz0123"}
    with local_start(ray, environ) as options:
        assert options == {"_node_ip_address": "127.0.0.1"}
        assert environ == {"PATH": "/bin", SINGLE_MACHINE_VAR: "0"}  # what Ray's processes get
        assert ray._private.ray_constants.ENABLE_RAY_CLUSTER is False
        environ["RAY_AUTH_MODE"] = "token"  # as ray.init does
    assert environ == {
        "PATH": "/bin",
        "OPENAI_API_KEY": "sk-abcdefghijklmnopqrstuvwxyz0123",
        "RAY_AUTH_MODE": "token",  # Ray's own setting stays
    }
    assert ray._private.ray_constants.ENABLE_RAY_CLUSTER is True


def test_local_start_restores_after_a_failed_start_and_a_preset_mode() -> None:
    ray = _fake_ray()
    environ = {SINGLE_MACHINE_VAR: "1", "MY_TOKEN": "abcdefghijkl"}
    with pytest.raises(RuntimeError), local_start(ray, environ):
        raise RuntimeError("ray.init failed")
    assert environ == {SINGLE_MACHINE_VAR: "1", "MY_TOKEN": "abcdefghijkl"}


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.2", False),
        ("::ffff:192.0.2.2", False),
        ("localhost", False),  # a name is not an address Ray bound to
        ("", False),
    ],
)
def test_is_loopback(address: str, loopback: bool) -> None:
    assert is_loopback(address) is loopback


def test_a_ray_on_an_outward_address_is_refused() -> None:
    outward = SimpleNamespace(util=SimpleNamespace(get_node_ip_address=lambda: "192.0.2.2"))
    with pytest.raises(ClusterError, match=r"would listen on 192\.0\.2\.2, not only on loopback"):
        assert_loopback(outward)
    assert_loopback(SimpleNamespace(util=SimpleNamespace(get_node_ip_address=lambda: "127.0.0.1")))
