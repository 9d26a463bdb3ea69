"""The OS confinement of commands, and the policy of what runs unasked.

``sandbox.py`` runs a command confined (Landlock through ``landlock_launcher.py`` with its
private mounts, ``launcher_mounts.py``, and seccomp filter, ``launcher_seccomp.py``;
bubblewrap where Landlock is missing), ``sandbox_env.py`` scrubs its environment and makes
its scratch folder, ``sandbox_profiles.py`` says what each confinement can promise here;
``shell_policy.py`` (with ``shell_options.py``; git by ``git_policy.py``'s table of read-only
forms, ``git_repository.py`` and ``git_secrets.py``)
decides which command lines are read-only enough to run unasked; ``programs.py`` says which
file a program's name means when Harvey runs it itself. It imports nothing of ``tools/``:
the shell tool, ``!cmd``, ``harvey doctor`` and ``/status`` all use it.
"""
