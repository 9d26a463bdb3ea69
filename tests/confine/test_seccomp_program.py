"""The seccomp program, run by a classic-BPF interpreter for every architecture it names.

The kernel tests (``tests/security/test_commands_kernel_calls.py``) prove the
x86_64 program where it runs; these prove the verdict of both tables for any
syscall and arguments, including aarch64, which no test machine here executes.
"""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from harvey.confine import launcher_seccomp as seccomp

ALLOW, DENY, KILL = seccomp.SECCOMP_RET_ALLOW, seccomp.DENY, seccomp.SECCOMP_RET_KILL_PROCESS


def run(program: bytes, arch: int, nr: int, args: list[int]) -> int:
    """The verdict of ``program`` for one call (the opcodes the launcher uses)."""
    data = struct.pack("=IIQ6Q", nr, arch, 0, *args)
    ops = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    assert len(ops) < 4096
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == seccomp.LD_ABS:
            acc = struct.unpack_from("=I", data, k)[0]
        elif code == seccomp.JEQ:
            pc += jt if acc == k else jf
        elif code == seccomp.JGE:
            pc += jt if acc >= k else jf
        elif code == seccomp.RET:
            return k
        else:  # pragma: no cover - an opcode the launcher never writes
            raise AssertionError(f"opcode {code:#x}")
        pc += 1
        assert pc < len(ops), "fell off the end"


def expected(
    table: seccomp.Table, nr: int, args: list[int], inet: bool, unix: bool, metadata: bool
) -> int:
    """The rules as docs/SECURITY.md states them."""
    names = {number: name for name, number in table.numbers.items()}
    name = names.get(nr)
    low = [a & 0xFFFFFFFF for a in args]
    if nr >= seccomp.X32_SYSCALL_BIT:
        return KILL
    if name in (*seccomp.REFUSED, "io_uring_setup"):
        return DENY
    if name in seccomp.METADATA and not metadata:
        return DENY
    if name in seccomp.SELF_ONLY:
        return ALLOW if low[0] == 0 else DENY
    if name in seccomp.PRIORITY:
        return ALLOW if low[0] != seccomp.PRIORITY[name] and low[1] == 0 else DENY
    if name == "ioctl" and not metadata and low[1] in seccomp.METADATA_IOCTLS:
        return DENY
    if name == "socket":
        if not inet:
            return DENY
        return DENY if low[0] == seccomp.AF_UNIX and not unix else ALLOW
    return ALLOW


tables = st.sampled_from(["x86_64", "aarch64"])
interesting = st.sampled_from([0, 1, 2, 3, seccomp.AF_UNIX, 1 << 32, (1 << 32) + 5, 0xFFFFFFFF])
arguments = st.lists(st.one_of(interesting, st.integers(0, 2**64 - 1)), min_size=6, max_size=6)


@given(
    machine=tables,
    choice=st.data(),
    args=arguments,
    inet=st.booleans(),
    unix=st.booleans(),
    metadata=st.booleans(),
)
def test_every_call_gets_the_documented_verdict(
    machine: str,
    choice: st.DataObject,
    args: list[int],
    inet: bool,
    unix: bool,
    metadata: bool,
) -> None:
    table = seccomp.ARCHES[machine]
    named = sorted(table.numbers.values())
    nr = choice.draw(st.one_of(st.sampled_from(named), st.integers(0, 2**32 - 1)))
    program = seccomp.filter_program(machine, inet, unix, metadata)
    assert run(program, table.arch, nr, args) == expected(table, nr, args, inet, unix, metadata)


@given(machine=tables, arch=st.integers(0, 2**32 - 1), nr=st.integers(0, 500))
def test_a_foreign_architecture_is_killed(machine: str, arch: int, nr: int) -> None:
    table = seccomp.ARCHES[machine]
    program = seccomp.filter_program(machine, True, True)
    verdict = run(program, arch, nr, [0] * 6)
    assert verdict == KILL or arch == table.arch


def test_each_table_names_every_rule() -> None:
    for table in (seccomp.X86_64, seccomp.AARCH64):
        for name in (*seccomp.REFUSED, *seccomp.SELF_ONLY, *seccomp.PRIORITY, "socket", "ioctl"):
            assert table.get(name) is not None, name
        # aarch64 has only the *at forms; the filter must still name every one it has.
        assert {"fchmodat", "fchownat", "utimensat", "fsetxattr"} <= set(table.numbers)
