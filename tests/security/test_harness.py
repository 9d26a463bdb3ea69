"""The harness itself: a benign call goes through, and the key is checked where it could leak."""

from __future__ import annotations

import pytest

from tests.security.conftest import Attack, snapshot


def test_benign_read_reaches_the_model_and_leaks_nothing(
    attack: Attack, victim_workspace, outside
) -> None:
    (victim_workspace / "notes.md").write_text("meeting at noon\n")
    before = snapshot(outside)
    result = attack([("read_file", {"path": "notes.md"})])
    assert result.proc.returncode == 0, result.proc.stderr
    assert any("meeting at noon" in out for out in result.tool_outputs)
    result.assert_secret_absent()
    result.assert_outside_untouched(before)


def test_harness_would_notice_a_leak(attack: Attack, victim_workspace) -> None:
    # The model is sent the file's text, so a marker in it must be noticed
    # (a plain word: a key-shaped string would be redacted before it is sent).
    (victim_workspace / "leak.txt").write_text("marker PLAINMARKER42\n")
    result = attack([("read_file", {"path": "leak.txt"})])
    with pytest.raises(AssertionError):
        result.assert_secret_absent("PLAINMARKER42")
