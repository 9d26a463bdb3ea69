"""The small-model tool-call protocol that only the chat turn drives.

Whether a model gets tool schemas, or a grammar, or neither (``tool_choice.py``, with
``tool_support.py`` finding out what a server's template can do), tool calls a model
wrote as text rescued (``text_tool_calls.py``), a tool's name as a model spells it
(``turn_names.py``), one round of calls run and answered (``tool_rounds.py``), and the
reply's text held back while it may still turn out to be a call (``stream_holdback.py``).
It sits in ``chat/`` because nothing below the chat turn uses it: ``llm/`` stays the
backends.
"""
