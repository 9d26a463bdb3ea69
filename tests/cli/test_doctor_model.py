"""``harvey doctor`` names the model and says what a small one can do (issue 39, point 4)."""

from __future__ import annotations

from .conftest import Run


def test_doctor_says_the_embedded_model_is_the_135m_one_and_what_needs_a_server(
    harvey: Run,
) -> None:
    proc = harvey("doctor", env={"HARVEY_BACKEND": "local"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    finder = next(i for i, line in enumerate(lines) if line.startswith("evidence finder:"))
    assert lines[finder + 1] == "model: SmolLM2-135M-Instruct (local)"
    notice = lines[finder + 2]
    assert notice.startswith("SmolLM2-135M-Instruct is the embedded 135M model: good for cited")
    assert "folder listings" in notice and "edits you approve" in notice
    assert "ollama pull" in notice and "--backend openai" in notice


def test_doctor_says_nothing_of_the_kind_for_a_larger_model(harvey: Run) -> None:
    env = {"HARVEY_BACKEND": "openai", "HARVEY_MODEL": "llama3:8b"}
    proc = harvey("doctor", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "model: llama3:8b (openai)" in proc.stdout
    assert "Free-form work" not in proc.stdout
