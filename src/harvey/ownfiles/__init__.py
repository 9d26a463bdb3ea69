"""Harvey's own files, written so a hostile workspace cannot redirect them.

``nofollow.py`` is the one writer (a trusted root plus plain names, opened one name at a
time without following a link), ``private.py`` keeps what Harvey stores about a session
readable by its user only, ``atomic.py`` replaces a file whole. Below everything that
writes: recordings, stores, plans, offloaded output, checkpoints.
"""
