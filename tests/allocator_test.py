"""glibc's malloc made to reuse large blocks, for training on torch on a CPU
(keras_luong/training/allocator.py)."""

import ctypes
import os
import platform
import subprocess
import sys
import textwrap

import pytest

from keras_luong.training import allocator
from tests.test_case import in_jax_run_only

pytestmark = in_jax_run_only("the allocator setting (no backend)")

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# Run in a process of its own, which nothing has tuned before, for a block of 40 MiB: the
# bytes glibc maps on pages of their own while it is held (mallinfo2's hblkhd), and the bytes
# its heap still holds from the system after the block is freed (arena), before and after
# reuse_large_blocks().
BLOCKS = textwrap.dedent(
    """
    import ctypes, ctypes.util, importlib.util, sys
    spec = importlib.util.spec_from_file_location("allocator", sys.argv[1])
    allocator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(allocator)
    class Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks "
                    "keepcost".split()]
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.mallinfo2.restype = Info
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    def block(size):
        before = libc.mallinfo2()
        held = libc.malloc(size)
        mapped = libc.mallinfo2().hblkhd - before.hblkhd
        libc.free(held)
        return mapped, libc.mallinfo2().arena - before.arena
    print(*block(40 << 20), allocator.reuse_large_blocks(), *block(40 << 20), *block(40 << 20))
    """
)


@pytest.mark.skipif(not GLIBC, reason="mallopt's thresholds are glibc's")
def test_large_blocks_come_from_the_heap_and_stay_there():
    """By default glibc maps a 40 MiB block on pages of its own (above its 32 MiB ceiling)
    and unmaps them when it is freed; after `reuse_large_blocks()` (1 GiB) the heap serves it
    and keeps it when freed, so the next such block maps nothing and grows nothing."""
    done = subprocess.run(
        [sys.executable, "-c", BLOCKS, os.path.abspath(allocator.__file__)],
        capture_output=True,
        text=True,
        check=True,
    )
    mapped, kept, reused, mapped_after, kept_after, mapped_again, grown = done.stdout.split()
    assert int(mapped) >= 40 << 20 and int(kept) == 0  # mapped, then given back
    assert reused == "True"
    assert int(mapped_after) == 0 and int(kept_after) >= 40 << 20  # the heap's, and kept
    assert (int(mapped_again), int(grown)) == (0, 0)  # the same memory again


def test_a_library_without_mallopt_is_left_as_it_is(monkeypatch):
    """Where the C library is not glibc (no `mallopt`), nothing is set: `False`."""

    class NoMallopt:
        def __init__(self, name):
            pass

    monkeypatch.setattr(ctypes, "CDLL", NoMallopt)
    assert allocator.reuse_large_blocks() is False


@pytest.mark.parametrize("size", [-1, 2**31, 1.5, "1GiB", True, None])
def test_bad_sizes_are_refused(size):
    with pytest.raises(ValueError, match=f"size={size!r}"):
        allocator.reuse_large_blocks(size)
