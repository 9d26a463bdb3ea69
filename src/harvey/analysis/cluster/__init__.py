"""Running the map phase on a Ray cluster (``harvey analyze --executor ray``).

Optional: Ray comes with ``pip install 'harvey-agent[ray]'`` and is imported
only by ``connect.py`` when a run asks for it (``local.py`` keeps a Ray started
here on loopback and out of reach of the user's secrets). ``recipe.py`` describes a map
client so a node can build it, ``workers.py`` is what runs on the nodes, and
``executor.py`` is the ``MapExecutor`` the analysis engine calls.
"""
