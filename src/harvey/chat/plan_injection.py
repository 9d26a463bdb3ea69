"""The two places a plan enters a prompt, composed around the one reducer.

* **Dynamic** (the first turn after the plan changed, in that turn's user message:
  ``chat/plan_context.py``): ``"Plan summary: "`` + the reduced composed plan
  (title and content) within ``DYNAMIC_BUDGET`` bytes.
* **Handover** (a session continued, or a new session picking up an existing
  plan): the handover frame around ``reduce_plan(contain_tags(content),
  HANDOVER_BUDGET)``, inside Harvey's ``<harvey-system>`` wrapper.

Neither site truncates on its own: both defer to ``reduce_plan``, so under
budget the injected text is byte-identical to the unreduced composition. The
prefix, frame and wrapper lie outside the budgets. A reduction is logged as
one structured record (sizes and counts, never plan text) so an operator can
see how often plans outgrow the budget without the log leaking plan content.
"""

from __future__ import annotations

import logging

from harvey.chat.plan_budget import (
    CLOSE_TAG,
    DYNAMIC_BUDGET,
    HANDOVER_BUDGET,
    OPEN_TAG,
    contain_tags,
    reduce_plan,
)

HARVEY_SYSTEM_OPEN = OPEN_TAG
HARVEY_SYSTEM_CLOSE = CLOSE_TAG
PLAN_SUMMARY_PREFIX = "Plan summary: "
HANDOVER_FRAME = "\nThe task has an implementation plan:\n\n%s\n"

SITE_DYNAMIC = "dynamic"
SITE_HANDOVER = "handover"

# The structured fields of a reduction record; tests and log processors key on these.
LOG_FIELDS = (
    "site",
    "session_id",
    "plan_input_bytes",
    "plan_output_bytes",
    "plan_sections_omitted",
)

_log = logging.getLogger(__name__)


def compose_dynamic(title: str, content: str) -> str:
    """The dynamic site's composed document: ``(title + "\\n" + content).strip()``."""
    return (title + "\n" + content).strip()


def _log_reduction(
    logger: logging.Logger | None,
    site: str,
    session_id: str,
    composed: str,
    output: str,
    omitted: int,
) -> None:
    extra = {
        "site": site,
        "session_id": session_id,
        "plan_input_bytes": len(composed.encode("utf-8", "surrogatepass")),
        "plan_output_bytes": len(output.encode("utf-8", "surrogatepass")),
        "plan_sections_omitted": omitted,
    }
    (logger or _log).info(
        "plan reduced for %s injection: %d -> %d bytes, %d sections omitted",
        site,
        extra["plan_input_bytes"],
        extra["plan_output_bytes"],
        omitted,
        extra=extra,
    )


def dynamic_plan_text(
    title: str,
    content: str,
    *,
    session_id: str = "",
    logger: logging.Logger | None = None,
) -> str | None:
    """The plan summary a turn sends when the plan changed, or ``None`` when there is
    nothing to inject.

    A title with blank content still injects the title (R12's site asymmetry):
    emptiness is judged on the composed document, not on the content.
    """
    composed = compose_dynamic(title, content)
    output, reduced, omitted = reduce_plan(composed, DYNAMIC_BUDGET)
    if reduced:
        _log_reduction(logger, SITE_DYNAMIC, session_id, composed, output, omitted)
    if not output:
        return None
    return PLAN_SUMMARY_PREFIX + output


def handover_text(
    content: str,
    *,
    session_id: str = "",
    logger: logging.Logger | None = None,
) -> str | None:
    """The handover block for a continued session, or ``None`` when there is no plan.

    Tags are contained before reduction so a plan can neither close nor forge
    the wrapper; the reducer then bounds what is left.
    """
    contained = contain_tags(content)
    output, reduced, omitted = reduce_plan(contained, HANDOVER_BUDGET)
    if reduced:
        _log_reduction(logger, SITE_HANDOVER, session_id, contained, output, omitted)
    if not output:
        return None
    return HARVEY_SYSTEM_OPEN + HANDOVER_FRAME % output + HARVEY_SYSTEM_CLOSE
