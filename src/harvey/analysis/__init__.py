"""Everything map-reduce: a document too big for one prompt, analysed in chunks.

``chunking`` and ``cut_points`` cut a document into bounded, lossless chunks
(``stream_chunking`` for files bigger than memory, ``file_chunks`` for a
workspace file); ``engine`` runs the map phase (in threads, on an endpoint
pool, or on a Ray cluster through ``cluster/``) and the reduce (``reduce``);
``folder_reads`` and ``folder_analysis`` do the same for a set of files. Nothing
here needs an ``Agent`` or a chat session, and nothing is imported until used.
"""
