"""What of the workspace the model may read, decided in one place.

``paths.py`` says where a path may lead (inside, never Harvey's own state, never a
secret file or a hard link when the bytes go to the model), ``files.py`` walks a folder
the way a person means "all my files" and opens a file only if it is a regular one,
``secret_files.py`` holds the secret-file rule, ``kinds.py`` tells prose from source by
name, and ``view.py`` splits the workspace around its secrets for the sandbox. Nothing
here imports a package above it: readers in ``analysis/``, ``knowledge/``, ``tools/``
and the sandbox all ask here.
"""
