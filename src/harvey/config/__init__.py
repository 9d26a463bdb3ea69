"""Configuration: what each ``harvey.yaml`` says, added up, screened and validated.

``settings.py`` is the validated model and its precedence, ``layers.py`` adds the files
up, ``yaml_text.py`` reads YAML strictly, ``trust.py`` screens a workspace's file (what it
may set, the limits it may only lower) and ``trust_store.py`` remembers what the user
trusted; ``choices.py`` holds the spelled choices other packages derive theirs from.
"""
