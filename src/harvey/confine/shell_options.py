"""The option tables behind ``shell_policy``: what each allow-listed program accepts.

One ``Program`` per program of the default allow-list, written from the GNU
``--help`` texts (coreutils 9, grep 3, findutils 4.9, diffutils 3, file 5,
tree 2). Short options use getopt's own notation (``"k:"`` = ``-k`` takes a
value); long options are listed by name with ``=`` for a required value and
``[=]`` for an optional one, because the parser must know every long option to
resolve the abbreviations getopt_long accepts (``--compress-prog`` is
``--compress-program``). ``roles`` marks the options that matter: those whose
value names a file (checked against the workspace) and those that make the
program write, run something, read a list of file names or follow symlinks
(never run unasked). An option missing from a table is not trusted: it asks,
because the same letter may mean something else in another implementation
(BSD ``grep -S`` follows symlinks) or a newer version.

``find`` has its own expression language and its own table at the end.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum


class Role(Enum):
    """What an option does that the policy cares about; the value is the human reason."""

    PATH = "names a file"  # its value is path-checked; not risky by itself
    PATH_LIST = "names files (colon-separated)"  # likewise, for every element
    WRITES = "lets {program} write files"
    RUNS = "lets {program} run other programs"
    FILE_LIST = "makes {program} read file names from a file, which cannot be checked"
    FOLLOWS = "makes {program} follow symbolic links, which may lead out of the workspace"
    UNSANDBOXED = "switches off {program}'s own sandbox"

    @property
    def risky(self) -> bool:
        return self not in (Role.PATH, Role.PATH_LIST)


class Operands(Enum):
    """How a program reads its operands."""

    FILES = "files"  # every operand names a file
    PRINTED = "printed"  # nothing names a file: echo prints its arguments
    COMMANDS = "commands"  # program names; one with a '/' is a path (which)


@dataclass(frozen=True)
class Program:
    """One program's options. See the module docstring for the notation."""

    short: str
    long: str
    roles: Mapping[str, Role] = field(default_factory=dict)  # keys "-o" / "--output"
    operands: Operands = Operands.FILES
    max_operands: int | None = None  # more than this many operands means a write (uniq IN OUT)
    pattern_operand: bool = False  # grep: first operand is the pattern unless -e/-f given
    pattern_options: tuple[str, ...] = ()  # the options that supply the pattern instead
    # Short options whose value is text in every implementation (a pattern, a separator).
    # Every other short option's value is checked like a path: BSD ls -T takes none, so
    # "ls -T /etc" lists /etc there.
    free: tuple[str, ...] = ()
    follow_cancelled_by: str | None = None  # diff -r follows symlinks unless --no-dereference
    # diff compares a folder's entries, reading through symlinks in it, even without -r.
    follows_into_folders: bool = False
    # tree parses its own options: a value letter takes the *next* argument and the
    # cluster goes on (``-Lo 2 out``). The parse is less certain, so every value is checked.
    values_from_next_args: bool = False

    def short_options(self) -> dict[str, bool]:
        """Letter -> takes a value."""
        letters: dict[str, bool] = {}
        for i, char in enumerate(self.short):
            if char != ":":
                letters[char] = self.short[i + 1 : i + 2] == ":"
        return letters

    def long_options(self) -> dict[str, str]:
        """Name -> "" (no value), "=" (required) or "[=]" (optional, only as ``--name=v``)."""
        options: dict[str, str] = {}
        for word in self.long.split():
            match = re.fullmatch(r"([a-z0-9-]+)(=|\[=\])?", word)
            if match is None:
                raise ValueError(f"bad long option spec {word!r}")
            options[match.group(1)] = match.group(2) or ""
        return options


_F = Role.FOLLOWS
_P = Role.PATH

PROGRAMS: dict[str, Program] = {
    "ls": Program(
        short="aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ1",
        long="all almost-all author escape block-size= ignore-backups color[=] directory dired "
        "classify[=] file-type format= full-time group-directories-first no-group "
        "human-readable si dereference-command-line dereference-command-line-symlink-to-dir "
        "hide= hyperlink[=] indicator-style= inode ignore= kibibytes dereference "
        "numeric-uid-gid literal hide-control-chars show-control-chars quote-name "
        "quoting-style= reverse recursive size sort= time= time-style= tabsize= width= "
        "context zero help version",
        roles={
            "-L": _F,
            "--dereference": _F,
            "-H": _F,
            "--dereference-command-line": _F,
            "--dereference-command-line-symlink-to-dir": _F,
        },
    ),
    "cat": Program(
        short="AbeEnstTuv",
        long="show-all number-nonblank show-ends number squeeze-blank show-tabs "
        "show-nonprinting help version",
    ),
    "head": Program(
        short="c:n:qvz0123456789",  # digits: the obsolete "head -5"
        long="bytes= lines= quiet silent verbose zero-terminated help version",
    ),
    "tail": Program(
        short="c:fFn:qs:vz0123456789",
        long="bytes= follow[=] lines= max-unchanged-stats= pid= quiet silent retry "
        "sleep-interval= verbose zero-terminated help version",
    ),
    "wc": Program(
        short="cmlLw",
        long="bytes chars lines files0-from= max-line-length words total= help version",
        roles={"--files0-from": Role.FILE_LIST},
    ),
    "stat": Program(
        short="Lfc:t",
        long="dereference file-system cached= format= printf= terse help version",
        roles={"-L": _F, "--dereference": _F},
    ),
    "du": Program(
        short="0aB:bcDd:HhkLlmPSst:X:x",
        long="null all apparent-size block-size= bytes total dereference-args max-depth= "
        "files0-from= human-readable inodes dereference count-links no-dereference "
        "separate-dirs si summarize threshold= time[=] time-style= exclude-from= exclude= "
        "one-file-system help version",
        roles={
            "-L": _F,
            "--dereference": _F,
            "-D": _F,
            "-H": _F,
            "--dereference-args": _F,
            "--files0-from": Role.FILE_LIST,
            "-X": _P,
            "--exclude-from": _P,
        },
    ),
    "sort": Program(
        short="bdfgiMhnRrVcCk:mo:sS:t:T:uz",
        long="ignore-leading-blanks dictionary-order ignore-case general-numeric-sort "
        "ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort "
        "random-source= reverse sort= version-sort batch-size= check[=] compress-program= "
        "debug files0-from= key= merge output= stable buffer-size= field-separator= "
        "temporary-directory= parallel= unique zero-terminated help version",
        roles={
            "-o": Role.WRITES,
            "--output": Role.WRITES,
            "-T": Role.WRITES,
            "--temporary-directory": Role.WRITES,
            "--compress-program": Role.RUNS,
            "--files0-from": Role.FILE_LIST,
            "--random-source": _P,
        },
        free=("-t",),
    ),
    "uniq": Program(
        short="cdDf:is:uzw:",
        long="count repeated all-repeated[=] skip-fields= group[=] ignore-case skip-chars= "
        "unique zero-terminated check-chars= help version",
        max_operands=1,
    ),
    "grep": Program(
        short="EFGPe:f:iywxzsvVm:bnHhoqaId:D:rRLlcTZB:A:C:U0123456789",
        long="extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= "
        "ignore-case no-ignore-case word-regexp line-regexp null-data no-messages "
        "invert-match version help max-count= byte-offset line-number no-line-number "
        "line-buffered with-filename no-filename label= only-matching quiet silent "
        "binary-files= text directories= devices= recursive dereference-recursive include= "
        "exclude= exclude-from= exclude-dir= files-without-match files-with-matches count "
        "initial-tab null before-context= after-context= context= group-separator= "
        "no-group-separator color[=] colour[=] binary",
        roles={
            "-f": _P,
            "--file": _P,
            "--exclude-from": _P,
            "-R": _F,
            "--dereference-recursive": _F,
        },
        pattern_operand=True,
        pattern_options=("-e", "--regexp", "-f", "--file"),
        free=("-e",),
    ),
    "diff": Program(
        short="qscC:uU:enyW:pF:tTlrNx:X:S:iEZbwBaI:D:dvL:",
        long="normal brief report-identical-files context[=] unified[=] ed rcs side-by-side "
        "width= left-column suppress-common-lines show-c-function show-function-line= "
        "label= expand-tabs initial-tab tabsize= suppress-blank-empty paginate recursive "
        "no-dereference new-file unidirectional-new-file ignore-file-name-case "
        "no-ignore-file-name-case exclude= exclude-from= starting-file= from-file= "
        "to-file= ignore-case ignore-tab-expansion ignore-trailing-space "
        "ignore-space-change ignore-all-space ignore-blank-lines ignore-matching-lines= "
        "text strip-trailing-cr ifdef= old-group-format= new-group-format= "
        "unchanged-group-format= changed-group-format= line-format= old-line-format= "
        "new-line-format= unchanged-line-format= minimal horizon-lines= speed-large-files "
        "color[=] palette= help version",
        roles={
            "-l": Role.RUNS,  # pipes the output through pr
            "--paginate": Role.RUNS,
            "-r": _F,  # recursing, diff follows symlinks unless --no-dereference
            "--recursive": _F,
            "-X": _P,
            "--exclude-from": _P,
            "-S": _P,
            "--starting-file": _P,
            "--from-file": _P,
            "--to-file": _P,
        },
        follow_cancelled_by="no-dereference",
        follows_into_folders=True,
        free=("-I", "-F", "-L", "-D"),
    ),
    "file": Program(
        short="bcCde:f:F:hiklLm:nNprsSvzZ0P:",
        long="help version magic-file= uncompress uncompress-noreport brief "
        "checking-printout exclude= exclude-quiet= files-from= separator= mime apple "
        "extension mime-type mime-encoding keep-going list dereference no-dereference "
        "no-buffer no-pad print0 preserve-date parameter= raw special-files no-sandbox "
        "compile debug",
        roles={
            "-f": Role.FILE_LIST,
            "--files-from": Role.FILE_LIST,
            "-m": Role.PATH_LIST,
            "--magic-file": Role.PATH_LIST,
            "-L": _F,
            "--dereference": _F,
            "-C": Role.WRITES,  # compiles the magic file into a .mgc file
            "--compile": Role.WRITES,
            "-p": Role.WRITES,  # resets access times
            "--preserve-date": Role.WRITES,
            "-z": Role.RUNS,  # may run decompressors
            "-Z": Role.RUNS,
            "--uncompress": Role.RUNS,
            "--uncompress-noreport": Role.RUNS,
            "-S": Role.UNSANDBOXED,
            "--no-sandbox": Role.UNSANDBOXED,
        },
    ),
    "tree": Program(
        short="adlfxL:RP:I:o:qNQpugshDFvtcUrCASnXJH:T:i",
        long="help version inodes device noreport nolinks dirsfirst filesfirst charset= "
        "filelimit= si du prune timefmt= ignore-case matchdirs sort= fromfile fromtabfile "
        "fflinks gitignore gitfile= info infofile= metafirst hintro= houtro= opt-toggle "
        "condense noindent hyperlink",
        roles={
            "-l": _F,
            "-o": Role.WRITES,
            "-R": Role.WRITES,  # with -H, reruns tree writing 00Tree.html in every folder
            "--gitfile": _P,
            "--infofile": _P,
            "--hintro": _P,
            "--houtro": _P,
        },
        values_from_next_args=True,
    ),
    "pwd": Program(short="LP", long="logical physical help version"),
    "echo": Program(short="neE", long="help version", operands=Operands.PRINTED),
    "which": Program(short="as", long="", operands=Operands.COMMANDS),
}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# find: leading options (before the starting points), then an expression.
FIND_LEADING: dict[str, Role | None] = {"-H": _F, "-L": _F, "-P": None}
FIND_OPERATORS = frozenset({"(", ")", "!", ",", "-not", "-a", "-and", "-o", "-or"})
FIND_RISKY: dict[str, Role] = {
    "-exec": Role.RUNS,
    "-execdir": Role.RUNS,
    "-ok": Role.RUNS,
    "-okdir": Role.RUNS,
    "-delete": Role.WRITES,
    "-fprint": Role.WRITES,
    "-fprint0": Role.WRITES,
    "-fprintf": Role.WRITES,
    "-fls": Role.WRITES,
    "-files0-from": Role.FILE_LIST,
    "-follow": Role.FOLLOWS,
}
FIND_FILE_ARG = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
FIND_NEWER_XY = re.compile(r"-newer[aBcmt][aBcmt]")  # -newermt takes a time; checked anyway
FIND_PLAIN_ARG = _words(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname "
    "-maxdepth -mindepth -type -xtype -perm -size -user -group -uid -gid -links -inum "
    "-amin -atime -cmin -ctime -mmin -mtime -used -fstype -context -printf -regextype"
)
FIND_NO_ARG = _words(
    "-print -print0 -ls -prune -quit -true -false -empty -readable -writable -executable "
    "-nouser -nogroup -depth -d -mount -xdev -noleaf -daystart -nowarn -warn "
    "-ignore_readdir_race -noignore_readdir_race -help --help -version --version"
)

# Words in a long option of a program without a table that suggest it writes, runs
# something, reads other files or follows links: such an option is never run unasked.
RISKY_WORDS = (
    "output",
    "exec",
    "program",
    "command",
    "cmd",
    "file",
    "from",
    "dir",
    "temp",
    "tmp",
    "write",
    "shell",
    "script",
    "pager",
    "editor",
    "follow",
    "deref",
    "log",
    "save",
    "config",
    "hook",
    "plugin",
    "load",
    "eval",
    "action",
    "rsh",
    "compress",
    "filter",
    "pipe",
    "to-",
)

# Programs whose purpose is running another program: the allow-list cannot see what.
WRAPPERS = _words(
    "env xargs nice nohup timeout stdbuf setsid watch flock time sudo doas su strace ltrace "
    "chroot unshare nsenter parallel busybox"
)
# Programs without a table whose options run other programs (short letters count
# anywhere in a cluster; long options by any abbreviation). ``tar -I sh``,
# ``--to-command``, ``--checkpoint-action=exec=``; ``rsync -e``; ``zip -TT``.
RUNS_PROGRAMS: dict[str, tuple[str, ...]] = {
    "tar": (
        "-I",
        "-F",
        "--use-compress-program",
        "--to-command",
        "--checkpoint-action",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
    ),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "zip": ("-T", "--unzip-command"),
}
