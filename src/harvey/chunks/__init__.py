"""How a text is cut: into chunks that fit a model (``chunking``, ``cut_points``, whole
sections of a document, a stream of a big file) and into the units a claim rests on
(``units``: whole sentences and lines). Analysis, knowledge ingest and memory mining all
split with these, so none of them imports another's package to cut a text.
"""
