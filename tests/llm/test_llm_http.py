"""Backoff schedule and error translation, independent of any wire format."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harvey.errors import BackendHTTPError, ModelNotFound
from harvey.llm.http import BACKOFF_CAP, Endpoint, backoff_delay, error_detail, status_error

ENDPOINT = Endpoint("Ollama", "http://127.0.0.1:11434", "start it")


def test_backoff_doubles_from_half_a_second() -> None:
    assert [backoff_delay(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


@given(st.integers(min_value=0, max_value=200), st.none() | st.floats(0, 1e6))
def test_backoff_is_bounded_and_never_negative(attempt: int, retry_after: float | None) -> None:
    assert 0 <= backoff_delay(attempt, retry_after) <= BACKOFF_CAP


@given(st.integers(min_value=0, max_value=50))
def test_backoff_never_shrinks(attempt: int) -> None:
    assert backoff_delay(attempt) <= backoff_delay(attempt + 1)


def test_error_detail_understands_both_servers_and_plain_text() -> None:
    assert error_detail(b'{"error": "model \\"x\\" not found"}') == 'model "x" not found'
    assert error_detail(b'{"error": {"message": "bad key", "type": "auth"}}') == "bad key"
    assert error_detail(b"404 page not found\nmore") == "404 page not found"
    assert error_detail(b"") == ""


def test_status_errors_are_one_line_and_classified() -> None:
    missing = status_error(ENDPOINT, 404, b'{"error": "model x not found"}', "x")
    assert isinstance(missing, ModelNotFound)
    unavailable = status_error(ENDPOINT, 503, b"", None)
    assert isinstance(unavailable, BackendHTTPError) and unavailable.transient
    for err in (missing, unavailable, status_error(ENDPOINT, 401, b"nope", "x")):
        assert ENDPOINT.base_url in str(err) and "\n" not in str(err)
