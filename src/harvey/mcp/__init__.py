"""Model Context Protocol servers: configured where trust lives, approved by the hash of
what they run, each tool pinned by the hash of what it told the model.

``identity.py`` says what a server and a tool are (their hashes), ``screening.py`` flags a
description that reads as instructions to the model, ``approvals.py`` keeps what the user
approved (``HARVEY_HOME``) and decides what still asks, ``connection.py`` speaks to a
server through the official SDK (the optional extra ``harvey-agent[mcp]``), imported only
when a server is configured.
"""

#: How ``find_tools`` (``tools/mcp_tools.py``) begins an answer that lists tools; the
#: turn (``chat/calls/tool_rounds.py``) reads the found schemas back from it, so a call
#: rescued from text or chosen under a grammar may name them.
FOUND = "Found (call one by its name):"
