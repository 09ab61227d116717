"""Process housekeeping through glibc (ctypes), for the service's processes and the MILP's second chain: each
helper is a no-op where the call does not exist (another platform, another libc).

- `die_with_parent`: the kernel kills this process when its parent dies (PR_SET_PDEATHSIG).
- `give_back_heap`: glibc returns the free memory at the top of its heaps to the system (malloc_trim).
- `flush_c_stdio`: C's buffered output streams are written out (fflush).
- `give_back_file_pages`: the process's clean file-backed pages (shared libraries' code and read-only data,
  memory-mapped files) leave its memory (MADV_PAGEOUT); what is used again faults back in from the file.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
from functools import cache

_PR_SET_PDEATHSIG = 1
_MADV_PAGEOUT = 21  # Linux 5.4+; older kernels answer EINVAL and nothing changes


@cache
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return None
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


def die_with_parent() -> None:
    """The kernel sends this process SIGKILL when its parent dies, so no orphan keeps computing (or keeps an
    inherited listening socket open). Callers check os.getppid() after it: a parent dead before the call is missed."""
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(AttributeError):
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def give_back_heap() -> None:
    """Return the heap that large, freed allocations leave to the system (glibc's `malloc_trim`)."""
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(AttributeError):
            libc.malloc_trim(0)


def flush_c_stdio() -> None:
    """Write out every C stdio stream's buffer (`fflush(NULL)`): what a C library printed is in its file before the
    file descriptor is moved."""
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(AttributeError):
            libc.fflush(None)


def give_back_file_pages() -> int:
    """Page out the file-backed mappings of this process that hold no page of its own (MADV_PAGEOUT), and return how
    many mappings the kernel took the hint for.

    Why: starting the service reads far more of its libraries than serving requests does. Measured (29 Nov 2026,
    eighth session), the service process held 157 MiB of file pages once started: LLVM (llvmlite, 69 MiB), which only
    loads the MILP kernels from numba's cache at start-up; pyarrow and pandas (about 30 MiB), which OR-Tools' cp_model
    imports and trimtab never calls; and the import-time code of everything else. Clean file pages cost the machine
    nothing it cannot reclaim, but they are this process's resident memory (its RSS and PSS, what `top`, `docker
    stats` and the memory benchmark count), and every worker forked from it would share them.

    What the hint does: the kernel reclaims the pages that only this process maps; they stay in their files, and a
    page used again faults back in, from the page cache or, where the kernel freed it, from the disk (the first
    requests after start-up pay those faults once: a first milp plan took 0.13 s against 0.10 here; a request's
    memory then counts what it uses). Mappings holding anonymous pages (a library's data that the loader relocated,
    copied on write) are left alone: paging those out would send them to swap where there is some, not drop them.
    Call it once, after start-up's imports and warm-up, before forking the processes that should not hold the pages.
    """
    libc = _libc()
    if libc is None:
        return 0
    try:
        with open("/proc/self/smaps") as smaps:
            lines = smaps.read().splitlines()
    except OSError:
        return 0
    hinted = 0
    # smaps: a header line per mapping (address perms offset dev inode path), then its "Key: value kB" lines
    mapping: tuple[int, int] | None = None
    for line in lines:
        fields = line.split(maxsplit=5)
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            mapping = None
            # a path: a file (not [heap], [stack], an anonymous mapping)
            if len(fields) == 6 and fields[5].startswith("/"):
                low, high = (int(address, 16) for address in fields[0].split("-"))
                mapping = (low, high)
        elif mapping is not None and fields[0] == "Anonymous:":
            if fields[1] == "0" and libc.madvise(mapping[0], mapping[1] - mapping[0], _MADV_PAGEOUT) == 0:
                hinted += 1
            mapping = None
    return hinted
