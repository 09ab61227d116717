"""A second perturbation chain in a forked child process, on a core the call would leave idle (issue 10).

Why: on problems too large for the full model the search is the perturbation rounds (solvers.milp.solve._Rounds),
Python and compiled kernels on one core. On real skew they stall on one level of the loads' lattice for hundreds of
rounds and leave it by chance (one 1 s call of 40 nodes x 1,024 key groups ends anywhere from 0.43 to 0.67 points
on the same seed), and a request planned alone leaves the machine's other core idle. A child process forked at the
start of the rounds runs the same rounds with its own random stream until the same deadline. Each chain offers the
other its new best plans through shared memory, and each goes on from the better of the two: a second stream of
perturbations around one best plan (the CP-SAT thread of small problems, `_FullModelThread`, is the same idea).

At the lowest CPU priority (nice 19): where the service is busy (every core planning) the child gets only what is
idle and the call is what it was without it. It ends by the call's deadline on its own, when the parent asks (a flag
in the shared memory), or with the parent (Linux: PR_SET_PDEATHSIG); the parent waits at most STOP_GRACE_S for it,
then kills it.

Trees (solvers.milp.recombine) go from the child to the parent through a pipe made before the fork, both ends
non-blocking: the child writes each batch of new trees in one write of at most PIPE_BUF bytes (atomic: the parent
reads whole batches or nothing) and drops a batch when the pipe is full; the parent reads what is there when it
recombines and checks every tree as it would check a plan (`recombine.TreePool.add_tree`). The parent recombines the
trees of both chains, the child only makes them.

Shared memory: an anonymous shared mapping made before the fork, so both processes see it. It holds the stop flag, the
child's perturbation count, and one board per direction. Each board has two slots written in turn: a slot is marked
empty, then its plan, key and checksum are written, then its sequence number. A reader copies a slot and takes it
only when the sequence number is the same after the copy and the plan's checksum matches. A plan half written (a
kill in the middle, or a copy that raced the writer) is never taken. A plan taken is also checked against the rules
a plan must keep (pinned units at home, draining nodes only as a way home, the budget) before it is offered.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
import xxhash

from solvers.instance import AssignmentInstance, IntArray
from solvers.linux_process import die_with_parent

# The search helpers beside a call, this child and the full model's thread (solve._FullModelThread), share these:
NICE = 19  # their CPU priority, the lowest: on a busy machine they get only what is idle
STOP_GRACE_S = 0.02  # the longest a call waits past its end for a stopped helper (then a child is killed)
MIN_SECONDS = 0.2  # least time left for a second chain to start (a fork costs milliseconds at scale)
_HEADER = 2  # words: the stop flag, the child's perturbation count
_SLOT_HEADER = 4  # words: sequence number (0: being written), checksum, key (d, du + dl) as two float64
# The trees' pipe: its buffer asked of the kernel (the parent reads it at each recombination), and a write's limit
# (writes of at most PIPE_BUF bytes are atomic).
TREE_PIPE_BYTES = 1 << 20
_TREE_WRITE = select.PIPE_BUF

# Children killed but not yet reaped (a SIGKILLed process ends within milliseconds; it is reaped at the next start).
_unreaped: list[int] = []


def available() -> bool:
    """Whether a second chain can run here: Linux (fork, thread priorities, PR_SET_PDEATHSIG), at least two cores
    for this process, and no other thread in it (a fork copies only the calling thread: a lock another thread held
    would stay locked in the child)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores >= 2 and threading.active_count() == 1


def _checksum(plan: IntArray) -> int:
    return xxhash.xxh3_64_intdigest(np.ascontiguousarray(plan).data) & 0x7FFF_FFFF_FFFF_FFFF


class _Board:
    """Plans from one process to the other: two slots written in turn (see the module docstring)."""

    def __init__(self, words: np.ndarray, n_units: int) -> None:
        self.words = words  # int64 view of this board's part of the mapping
        self.floats = words.view(np.float64)
        self.n_units = n_units
        self.written = 0  # (writer) sequence numbers given so far
        self.read = 0  # (reader) the newest sequence number taken

    def _base(self, slot: int) -> int:
        return slot * (_SLOT_HEADER + self.n_units)

    def write(self, plan: IntArray, key: tuple[float, float]) -> None:
        self.written += 1
        base = self._base(self.written % 2)
        words = self.words
        words[base] = 0
        words[base + _SLOT_HEADER : base + _SLOT_HEADER + self.n_units] = plan
        words[base + 1] = _checksum(plan)
        self.floats[base + 2], self.floats[base + 3] = key
        words[base] = self.written

    def take(self) -> tuple[IntArray, tuple[float, float]] | None:
        """The newest complete plan not taken yet, else None."""
        found: tuple[int, IntArray, tuple[float, float]] | None = None
        for slot in (0, 1):
            base = self._base(slot)
            sequence = int(self.words[base])
            if sequence <= self.read or (found is not None and sequence <= found[0]):
                continue
            plan = self.words[base + _SLOT_HEADER : base + _SLOT_HEADER + self.n_units].copy()
            key = (float(self.floats[base + 2]), float(self.floats[base + 3]))
            if int(self.words[base]) != sequence or _checksum(plan) != int(self.words[base + 1]):
                continue  # written meanwhile, or half written
            found = (sequence, plan, key)
        if found is None:
            return None
        self.read = found[0]
        return found[1], found[2]


def keeps_rules(instance: AssignmentInstance, plan: IntArray, start: IntArray) -> bool:
    """Whether a plan read from the other process keeps what every plan of the search keeps: a node for every unit,
    pinned units where they start, no unit moved onto a draining node other than its own start, the budget."""
    if plan.shape != start.shape or plan.min(initial=0) < 0 or plan.max(initial=0) >= instance.n_nodes:
        return False
    if (plan[instance.pinned] != start[instance.pinned]).any():
        return False
    onto_draining = ~instance.active[plan] & (plan != start)
    return not onto_draining.any() and instance.within_budget(plan)


class SecondChain:
    """The child process and the shared memory, seen from either side (`in_child`)."""

    def __init__(
        self, n_units: int, mapping: mmap.mmap, pid: int, tree_pipe: tuple[int, int] | None = None
    ) -> None:
        self.mapping = mapping
        words = np.frombuffer(mapping, dtype=np.int64)
        self.header = words[:_HEADER]
        board = 2 * (_SLOT_HEADER + n_units)
        self.to_parent = _Board(words[_HEADER : _HEADER + board], n_units)
        self.to_child = _Board(words[_HEADER + board : _HEADER + 2 * board], n_units)
        self.pid = pid
        self.in_child = pid == 0
        self.ended = False
        # the trees' pipe: the child keeps the writing end, the parent the reading end (none: no trees travel)
        self.tree_fd: int | None = None
        if tree_pipe is not None:
            keep, close = (tree_pipe[1], tree_pipe[0]) if self.in_child else tree_pipe
            os.close(close)
            self.tree_fd = keep
        self.tree_bytes = b""  # (parent) a batch read in part
        self.trees_sent = self.trees_dropped = 0  # (child)

    @classmethod
    def fork(cls, n_units: int, run: Callable[[SecondChain], None]) -> SecondChain | None:
        """Start the child, which calls `run(chain)` and exits (never returns here); the parent gets the chain, or
        None where the fork failed."""
        _reap()
        size = 8 * (_HEADER + 4 * (_SLOT_HEADER + n_units))
        try:
            mapping = mmap.mmap(-1, size)  # anonymous and shared: the child sees the same pages
            tree_pipe = os.pipe()
        except OSError:  # (no memory for the mapping, no file descriptors: the call goes on alone)
            return None
        for fd in tree_pipe:
            os.set_blocking(fd, False)
        with contextlib.suppress(OSError, AttributeError):  # (a smaller buffer only drops more batches)
            fcntl.fcntl(tree_pipe[1], fcntl.F_SETPIPE_SZ, TREE_PIPE_BYTES)
        try:
            pid = os.fork()
        except OSError:  # (no memory for the process: the call goes on alone)
            for fd in tree_pipe:
                os.close(fd)
            return None
        chain = cls(n_units, mapping, pid, tree_pipe)
        if pid == 0:
            try:
                chain._become_child()
                run(chain)
            finally:
                os._exit(0)  # never back into the caller's code: no cleanup, no output of the parent's
        return chain

    def _become_child(self) -> None:
        die_with_parent()
        if os.getppid() == 1:  # the parent died before the line above took effect
            os._exit(0)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, NICE)

    # The child's side.
    def stop_asked(self) -> bool:
        return bool(self.header[0])

    def count(self, perturbations: int) -> None:
        self.header[1] = perturbations

    def send_trees(self, trees: Sequence[tuple[IntArray, IntArray]]) -> None:
        """New trees (units, their nodes) to the parent, as int32 records [k, k units, k nodes], in writes of whole
        records of at most PIPE_BUF bytes; a write the full pipe refuses is dropped (trees are a hint)."""
        if self.tree_fd is None:
            return
        batch: list[np.ndarray] = []
        size = 0
        for units, dests in trees:
            record = np.concatenate([[len(units)], units, dests]).astype(np.int32)
            if record.nbytes > _TREE_WRITE:
                continue
            if size + record.nbytes > _TREE_WRITE:
                self._write_trees(batch)
                batch, size = [], 0
            batch.append(record)
            size += record.nbytes
        if batch:
            self._write_trees(batch)

    def _write_trees(self, batch: list[np.ndarray]) -> None:
        assert self.tree_fd is not None
        try:
            os.write(self.tree_fd, np.concatenate(batch).tobytes())
            self.trees_sent += len(batch)
        except (BlockingIOError, BrokenPipeError):  # full, or the parent is gone
            self.trees_dropped += len(batch)

    # The parent's side.
    @property
    def perturbations(self) -> int:
        return int(self.header[1])

    def take_trees(self) -> list[tuple[IntArray, IntArray]]:
        """The trees the child has sent since the last call, as (units, nodes) pairs (unchecked: see
        recombine.TreePool.add_tree)."""
        if self.tree_fd is None or self.in_child:
            return []
        data = [self.tree_bytes]
        while True:
            try:
                chunk = os.read(self.tree_fd, TREE_PIPE_BYTES)
            except BlockingIOError:
                break
            if not chunk:  # the child has ended and everything is read
                break
            data.append(chunk)
        raw = b"".join(data)
        whole = len(raw) - len(raw) % 4
        words = np.frombuffer(raw[:whole], dtype=np.int32)
        trees: list[tuple[IntArray, IntArray]] = []
        at = 0
        while at < len(words):
            k = int(words[at])
            if k <= 0:  # (never written so: the rest cannot be read as records)
                at = len(words)
                break
            if at + 1 + 2 * k > len(words):
                break
            units, dests = words[at + 1 : at + 1 + k], words[at + 1 + k : at + 1 + 2 * k]
            trees.append((units.astype(np.int64), dests.astype(np.int64)))
            at += 1 + 2 * k
        self.tree_bytes = raw[4 * at :]
        return trees

    def close_trees(self) -> None:
        if self.tree_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.tree_fd)
            self.tree_fd = None

    def stop(self) -> None:
        """Ask the child to end, wait for it at most STOP_GRACE_S, then kill it. Its plans stay readable."""
        if self.ended or self.in_child:
            return
        self.ended = True
        self.close_trees()
        self.header[0] = 1
        until = time.perf_counter() + STOP_GRACE_S
        while True:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return
            if pid:
                return
            if time.perf_counter() >= until:
                break
            time.sleep(0.001)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        _unreaped.append(self.pid)
        _reap()


def _reap() -> None:
    for pid in list(_unreaped):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _unreaped.remove(pid)
