"""The bounded solver pool: every plan runs in a worker process, off the event loop, under a hard deadline.

- Admission: at most `workers + queue` calls at once; beyond that the caller gets 503 with Retry-After at once
  instead of an unbounded queue.
- Isolation (defence in depth): a plan request runs whole (parse, solve, validate, serialize) in one of `workers`
  long-lived worker processes, each under a memory limit (RLIMIT_AS). A worker that overruns its request's deadline
  or dies is killed with its process group and replaced by a fresh fork (milliseconds), so a runaway request costs
  one 503 and never a pinned core, a lost slot or a degraded service.
- Memory: a worker whose heap outgrew a fresh one's by RENEW_AFTER_GROWTH_BYTES (what freed requests leave behind
  in glibc's heap) is replaced by a fresh fork once it answered, so a request starts from about the service's base
  instead of the residue of every request before it.
- `run(fn)` keeps a small thread executor for cheap in-process calls (the splitter): closures cannot cross a
  process boundary.

Workers are forked (Linux `fork`: no re-import, a replacement starts in a few milliseconds, and the worker sees the
same registry as the service) from a zygote: a process forked from the service at start-up, before any request, that
does nothing but fork workers (`SolverPool.start`). Forked from the service itself, a worker made while requests are
in flight keeps a private copy of their bodies for good (40 MiB in an idle worker made during a 250,000-unit
request, measured 29 Nov 2026). Without `start` (a pool used on its own) workers are forked from the service
process. A child that inherited a lock held by another thread of the parent could block; the deadline kill is the
backstop for that too.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing
import os
import resource
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from service.errors import ProblemError
from solvers.linux_process import die_with_parent

T = TypeVar("T")
log = logging.getLogger("trimtab")

# A task a worker process runs: (payload, announce) -> WorkerAnswer; `announce(deadline)` tells the service the
# request's absolute deadline (time.monotonic, shared by every process of the machine) once the worker knows it.
Task = Callable[[Any, Callable[[float], None]], "WorkerAnswer"]


@dataclass
class WorkerAnswer:
    """What a worker hands back: a finished HTTP answer (body already serialized) and what the metrics need."""

    status: int
    body: bytes
    media_type: str
    headers: dict[str, str] = field(default_factory=dict)
    algorithm: str | None = None
    plan_status: str | None = None
    solve_s: float | None = None
    # plan quality for the metrics (the body is already serialized): load distance before/after, migrations
    load_distance_before: float | None = None
    load_distance_after: float | None = None
    migrations: int | None = None
    recycle: bool = False  # the worker ran out of memory: replace it (its heap may be fragmented)
    renew: bool = False  # the worker's heap outgrew a fresh one's (RENEW_AFTER_GROWTH_BYTES): replace it


# A worker whose anonymous memory grew by more than this since it started is replaced once it answered (the answer's
# own bytes not counted). Why: a worker keeps what its requests leave in the heap (glibc's freed fragments, the
# interpreter's arenas that a few live objects hold), and the next request's peak sits on top of it. Measured
# (29 Nov 2026, sixth and seventh sessions): after 250,000 units (a 17 MiB body) a request of 25,000 peaked at 412
# MiB in the service, 361 with the heap trimmed, against its cap of 349 (30 x body + 300 MiB; 309 on a fresh
# server); one worker that served CLB, ELB, COLA and largest-load-first requests of 0.1-0.3 MiB grew from 9 to 32
# MiB private, and the service's 0.06 MiB requests then peaked at 301-312 MiB against 302. This measure (statm:
# a few us; the private memory, smaps_rollup, costs 4 ms) sees new pages only: a fresh worker grows 2 MiB on its
# first small request, and copies about 6 MiB more of the service's pages it writes to, which it does not see. At
# 8 MiB a worker is renewed before its private memory passes about 16 MiB. A fork costs milliseconds.
RENEW_AFTER_GROWTH_BYTES = 8 << 20


def _statm_pages() -> list[int]:
    """/proc/self/statm in pages (size, resident, shared file-backed, ...): a few us."""
    with open("/proc/self/statm") as statm:
        return [int(field) for field in statm.read().split()]


def _virtual_memory_bytes() -> int:
    return _statm_pages()[0] * os.sysconf("SC_PAGE_SIZE")


def anonymous_resident_bytes() -> int:
    """This process's resident anonymous memory (resident minus file-backed), 0 where there is no /proc."""
    try:
        pages = _statm_pages()
        return (pages[1] - pages[2]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _worker_main(conn: Connection, task: Task, memory_limit_bytes: int) -> None:
    os.setsid()  # own process group: a kill takes the worker's children (e.g. the HiGHS subprocess) with it
    # Everything inherited from the service (its modules, app, settings) lives as long as the worker: out of the
    # collector's sight, a full collection walks only what requests allocate, and leaves the shared pages unwritten.
    gc.freeze()
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the service, which stops the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if memory_limit_bytes > 0:
        # RLIMIT_AS counts address space: the fork starts with the service's, so the limit is that plus the budget.
        limit = _virtual_memory_bytes() + memory_limit_bytes
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    fresh = anonymous_resident_bytes()
    while _serve_one(conn, task, fresh):
        pass


def _serve_one(conn: Connection, task: Task, fresh_bytes: int) -> bool:
    """One request in a worker: received and answered, the answer marked `renew` when the worker's memory outgrew
    `fresh_bytes` (its own at start) by RENEW_AFTER_GROWTH_BYTES. False when the service is gone."""
    try:
        payload = conn.recv()
    except (EOFError, OSError):
        return False
    answer = task(payload, lambda deadline: conn.send(("deadline", deadline)))
    del payload  # (what is left now is the residue, and the answer)
    if anonymous_resident_bytes() - len(answer.body) - fresh_bytes > RENEW_AFTER_GROWTH_BYTES:
        answer.renew = True
    try:
        conn.send(("answer", answer))
    except (OSError, ValueError):
        return False
    return True


def _zygote_main(conn: Connection, task: Task, memory_limit_bytes: int) -> None:
    """The zygote: on each request from the service, fork a worker and hand back its pid and the service's end of
    its pipe (a file descriptor over the socket pair). The kernel reaps the workers (SIGCHLD ignored here); the
    service kills them by pid."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    while True:
        try:
            conn.recv()
        except (EOFError, OSError):
            return
        service_end, worker_end = multiprocessing.get_context("fork").Pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                conn.close()
                service_end.close()
                # its own children (the second chain) are its to reap
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _worker_main(worker_end, task, memory_limit_bytes)
            finally:
                os._exit(0)
        worker_end.close()
        conn.send(pid)
        reduction.send_handle(conn, service_end.fileno(), pid)
        service_end.close()


ZYGOTE_ANSWER_S = 2.0


def _fork_child(
    target: Callable[[Connection, Task, int], None], task: Task, memory_limit_bytes: int, name: str
) -> tuple[Connection, multiprocessing.process.BaseProcess]:
    """A forked child of this process running target(its end of a duplex pipe, task, memory_limit_bytes): this
    process's end of the pipe (a Unix socket pair, which also carries file descriptors) and the child."""
    context = multiprocessing.get_context("fork")
    conn, child_end = context.Pipe()
    process = context.Process(
        target=target, args=(child_end, task, memory_limit_bytes), name=name, daemon=True
    )
    process.start()
    child_end.close()
    return conn, process


class _Zygote:
    def __init__(self, task: Task, memory_limit_bytes: int) -> None:
        self.conn, self.process = _fork_child(_zygote_main, task, memory_limit_bytes, "trimtab-zygote")
        self._lock = threading.Lock()
        self.broken = False

    def fork_worker(self) -> tuple[int, Connection]:
        """A new worker's pid and the service's end of its pipe. Raises OSError when the zygote is gone or does not
        answer within ZYGOTE_ANSWER_S (a fork takes milliseconds); it is not asked again."""
        with self._lock:
            if self.broken:
                raise OSError("the zygote is gone")
            self.broken = True  # until it answered
            self.conn.send("fork")
            if not self.conn.poll(ZYGOTE_ANSWER_S):
                raise OSError("the zygote did not answer")
            pid = int(self.conn.recv())
            service_end = Connection(reduction.recv_handle(self.conn))
            self.broken = False
            return pid, service_end

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
            os.kill(self.process.pid, signal.SIGKILL)  # type: ignore[arg-type]
        self.conn.close()
        threading.Thread(target=self.process.join, daemon=True, name="trimtab-reaper").start()


class _Worker:
    def __init__(self, task: Task, memory_limit_bytes: int, zygote: _Zygote | None = None) -> None:
        self.process: multiprocessing.process.BaseProcess | None = None
        self.pid: int | None
        if zygote is not None:
            try:
                self.pid, self.conn = zygote.fork_worker()
                return
            except (OSError, EOFError, ValueError, RuntimeError):
                log.warning("the worker zygote is gone: forking a solver worker from the service process")
        self.conn, self.process = _fork_child(_worker_main, task, memory_limit_bytes, "trimtab-solver")
        self.pid = self.process.pid

    def kill(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self.conn.close()
        if self.process is not None:  # (a zygote's worker is reaped by the kernel)
            # Reap it without blocking the event loop (it is dead within milliseconds of SIGKILL).
            threading.Thread(target=self.process.join, daemon=True, name="trimtab-reaper").start()


class DeadlineExceeded(Exception):
    pass


class SolverPool:
    def __init__(
        self,
        workers: int,
        queue: int,
        retry_after_s: int,
        task: Task | None = None,
        memory_limit_bytes: int = 0,
    ) -> None:
        self._workers = workers
        self._task = task
        self._memory_limit_bytes = memory_limit_bytes
        self._executor: ThreadPoolExecutor | None = None  # made on first use, again after a shutdown
        self._admitted = threading.BoundedSemaphore(workers + queue)
        self.capacity = workers + queue
        self.retry_after_s = retry_after_s
        self._in_flight = 0
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []
        self._waiting: deque[asyncio.Future[_Worker]] = deque()
        self._zygote: _Zygote | None = None
        self.recycled = 0  # workers killed and replaced (overrun, crash, out of memory)
        self.renewed = 0  # workers replaced after their heap grew (RENEW_AFTER_GROWTH_BYTES), their work done

    def start(self) -> None:
        """Fork the zygote the workers are forked from: call it while no request is in flight (the app's start-up),
        so that every worker starts from the service's state then."""
        if self._task is not None:
            with self._lock:
                if self._zygote is None:
                    self._zygote = _Zygote(self._task, self._memory_limit_bytes)

    def _new_worker(self) -> _Worker:
        return _Worker(self._task, self._memory_limit_bytes, self._zygote)  # type: ignore[arg-type]

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def _saturated(self) -> ProblemError:
        return ProblemError(
            503,
            "Solver pool saturated",
            f"all {self.capacity} solver slots are busy; retry after {self.retry_after_s} s",
            headers={"Retry-After": str(self.retry_after_s)},
        )

    @contextlib.contextmanager
    def _admission(self) -> Any:
        if not self._admitted.acquire(blocking=False):
            raise self._saturated()
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1
            self._admitted.release()

    async def run(self, fn: Callable[[], T]) -> T:
        """fn() on a thread of the service process (cheap calls only: nothing can stop a thread)."""
        with self._admission():
            return await asyncio.get_running_loop().run_in_executor(self._ensure_executor(), fn)

    async def run_isolated(self, payload: Any, deadline: float) -> WorkerAnswer:
        """The pool's task on `payload` in a worker process. `deadline` (time.monotonic) bounds the wait for a worker
        and the work until the worker announces the request's own deadline; past the deadline in force the worker is
        killed and replaced and DeadlineExceeded raised."""
        if self._task is None:
            raise RuntimeError("this pool has no worker task")
        with self._admission():
            worker = await self._acquire_worker(deadline)
            try:
                answer = await self._exchange(worker, payload, deadline)
            except BaseException:
                self._replace(worker)
                raise
            if answer.recycle:
                self._replace(worker)
            elif answer.renew:
                self._replace(worker, renewal=True)
            else:
                self._release(worker)
            return answer

    async def _acquire_worker(self, deadline: float) -> _Worker:
        with self._lock:
            while len(self._all) < self._workers:
                self._all.append(self._new_worker())
                self._idle.append(self._all[-1])
            if self._idle:
                return self._idle.pop()
            waiter: asyncio.Future[_Worker] = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
        try:
            return await asyncio.wait_for(waiter, max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            with self._lock:
                if waiter in self._waiting:
                    self._waiting.remove(waiter)
            if (
                waiter.done() and not waiter.cancelled()
            ):  # handed a worker just as the wait ended: give it back
                self._release(waiter.result())
            raise DeadlineExceeded("no solver worker became free before the deadline") from None

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            if worker not in self._all:
                return  # replaced meanwhile (shutdown)
            while self._waiting:
                waiter = self._waiting.popleft()
                if not waiter.done():
                    waiter.get_loop().call_soon_threadsafe(_hand_over, waiter, worker, self)
                    return
            self._idle.append(worker)

    def _replace(self, worker: _Worker, renewal: bool = False) -> None:
        worker.kill()
        with self._lock:
            if worker not in self._all:
                return
            self._all.remove(worker)
            if renewal:
                self.renewed += 1
                if not self._waiting:
                    # The fresh fork waits for the next request (_acquire_worker). Forked now from the service
                    # (no zygote), it would inherit the buffers of the request just answered that the service
                    # still holds, and keep them once the service frees them (measured: 46 MiB private in an idle
                    # fresh worker after 250,000 units).
                    return
            else:
                self.recycled += 1
            fresh = self._new_worker()
            self._all.append(fresh)
        self._release(fresh)

    async def _exchange(self, worker: _Worker, payload: Any, deadline: float) -> WorkerAnswer:
        return await _exchange(worker.conn, payload, deadline)

    def _ensure_executor(self) -> ThreadPoolExecutor:
        # The executor lives from the first call to the app's shutdown; an app whose lifespan runs again (test
        # clients, some ASGI hosts) gets a new one instead of "cannot schedule new futures after shutdown".
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="solver")
            return self._executor

    def shutdown(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
            workers, self._all, self._idle = self._all, [], []
            zygote, self._zygote = self._zygote, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            worker.kill()
        if zygote is not None:
            zygote.kill()


def _hand_over(waiter: asyncio.Future[_Worker], worker: _Worker, pool: SolverPool) -> None:
    if waiter.done():  # the waiter gave up meanwhile: the next one (or the idle list) gets the worker
        pool._release(worker)
    else:
        waiter.set_result(worker)


async def _exchange(conn: Connection, payload: Any, deadline: float) -> WorkerAnswer:
    """Send a worker its payload and wait for its answer on the pipe from the event loop (no thread per call),
    until `deadline` or the deadline the worker announces meanwhile.

    One reader for the whole exchange, whose callback takes each message as it comes: an announced deadline only
    moves the timer (the waiting request is not woken for it), the answer ends the wait. Per request that is one
    reader and one timer instead of a reader, a timer, a future and a wake-up per message (about 40 us of the
    service process's CPU per worker request measured)."""
    if deadline - time.monotonic() <= 0:
        raise DeadlineExceeded("the request's deadline passed")
    loop = asyncio.get_running_loop()
    answered: asyncio.Future[WorkerAnswer] = loop.create_future()

    def expire() -> None:
        if not answered.done():
            answered.set_exception(DeadlineExceeded("the request's deadline passed"))

    timer = loop.call_later(deadline - time.monotonic(), expire)

    def take() -> None:
        nonlocal timer
        if answered.done():  # (a callback queued before the reader was removed)
            return
        try:
            os.set_blocking(fd, True)  # (see below: the reader may have made it non-blocking)
            kind, value = conn.recv()
        except (EOFError, OSError) as exc:
            answered.set_exception(WorkerDied(str(exc) or "the solver worker exited"))
            return
        except Exception as exc:  # (anything else: the request's error, as when it read the pipe itself)
            answered.set_exception(exc)
            return
        if kind == "deadline":
            timer.cancel()
            timer = loop.call_later(float(value) - time.monotonic(), expire)
        else:
            answered.set_result(value)

    fd = conn.fileno()
    # The pipe is read and written whole-message, blocking: a message is sent whole, and read whole once its first
    # bytes are there. uvloop's add_reader (libuv's poll handle) puts the descriptor in non-blocking mode, and it
    # stays so: a message larger than the pipe's buffer (64 KiB) then failed halfway with EAGAIN (503 or 500 on
    # every large request, 30 Nov 2026). asyncio's leaves the mode alone; the mode is set before each send and read.
    os.set_blocking(fd, True)
    conn.send(payload)
    loop.add_reader(fd, take)
    try:
        return await answered
    finally:
        loop.remove_reader(fd)
        timer.cancel()


class WorkerDied(Exception):
    pass
