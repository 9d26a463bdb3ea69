"""The workspace profile's facts read a README that is a document as its text."""

from __future__ import annotations

from pathlib import Path

from harvey.memory.profile import facts
from tests.documents.makers import HTML_PAGE, pdf_bytes


def test_a_pdf_or_html_readme_is_read_as_text(tmp_path: Path) -> None:
    (tmp_path / "README.pdf").write_bytes(pdf_bytes([["A boiler controller in Rust."]]))
    (tmp_path / "README.html").write_bytes(HTML_PAGE)
    shown = facts(tmp_path)
    assert "Head of README.pdf:\nA boiler controller in Rust." in shown
    assert "Head of README.html:\n# Quarterly report" in shown
    assert "%PDF" not in shown and "SCRIPT-TEXT" not in shown
