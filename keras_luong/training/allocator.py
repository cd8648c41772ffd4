"""The C allocator's treatment of large blocks, which sets the pace of training on torch on a
CPU (`benchmarks/speed/torch_allocator.py`).

glibc's `malloc` gives every block above its mmap threshold (at most 32 MiB by default) pages
of its own, mapped when the block is allocated and unmapped when it is freed, and returns the
free memory at the top of its heap to the system once there is more than its trim threshold
(128 KiB by default). On torch on a CPU, each tensor of a training step's logits and of their
gradient (`B·T·V` floats: 57 MB at a batch of 2,048 tokens and 8,000 subwords) is such a
block, so a step maps several afresh, and the kernel zeroes them page by page as they are
first written. With both thresholds raised, blocks come from the heap and stay there when
freed, and the next step reuses them as they are.
"""

import ctypes
import ctypes.util

# mallopt's parameter numbers, in glibc's malloc.h.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def reuse_large_blocks(size=2**30):
    """Has glibc's `malloc` serve blocks of up to `size` bytes from its heap and keep up to
    `size` bytes of freed memory there, for the rest of the process: its mmap and trim
    thresholds, which the environment variables `MALLOC_MMAP_THRESHOLD_` and
    `MALLOC_TRIM_THRESHOLD_` set from a process's start. The process then holds on to memory
    it has freed, up to `size`, rather than giving it back to the system. Returns whether both
    were set: `False` where the C library has no `mallopt` (not glibc: macOS, musl) or
    refuses a value.

    Args:
        size: Bytes, at least 0 and at most 2³¹ - 1 (mallopt takes a C `int`). Defaults to
            1 GiB.
    """
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= 2**31 - 1:
        raise ValueError(
            "Invalid value for argument size: expected a number of bytes from 0 to 2**31 - 1. "
            f"Received: size={size!r}"
        )
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c")).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_TRIM_THRESHOLD, size) == 1 and mallopt(M_MMAP_THRESHOLD, size) == 1
