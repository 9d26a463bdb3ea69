"""Long-term memory: memories mined from recordings, reviewed, recalled at session start.

``store`` (memory.db), ``scrub`` (credentials rejected, paths made portable),
``recall`` (what starts a session, within a budget), ``startup`` (the hook
``open_runtime`` attaches), ``mining`` (recording → proposals through
structured output) and ``review`` (accept / edit / skip / quit).
"""
