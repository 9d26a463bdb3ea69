"""One retrieval floor: what finds the sentences that answer a question, for every feature.

The analysis finder, knowledge search, memory recall and ``find_tools`` all rank text
with the pieces here: the embedders (``embedders.py``, ``minilm.py``), one word helper
(``words.py``: the stopwords, ``coverage``, ``fts_query``), a lexical scorer
(``lexical.py``) and one fusion (``fusion.py``). Nothing here knows a feature.
"""
