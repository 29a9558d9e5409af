"""Forked worker processes for ``verify``: one process per task, at most a given number
at a time, the queued task of the highest priority first. A task can be dropped whether
it has started or not (its process is killed), and a task's exception is raised in the
parent, as :meth:`multiprocessing.pool.AsyncResult.get` would.

Forked processes inherit the parent's state: ``verify``'s progress reports from them
as they go.
"""

from __future__ import annotations

import ctypes
import heapq
import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

#: A task's name: a tuple of hashable values.
Key = tuple[Any, ...]
#: Compared as tuples: the highest first.
Priority = tuple[float, ...]
Task = tuple[Priority, int, Key, Callable[..., Any], tuple[Any, ...]]


class Workers:
    """At most ``count`` forked processes, one per task."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"workers: {count} processes is none")
        self.count = count
        self._queue: list[Task] = []
        self._running: dict[Key, tuple[BaseProcess, Connection]] = {}
        self._added = 0

    def add(self, key: Key, priority: Priority, fn: Callable[..., Any], *args: Any) -> None:
        """Queue ``fn(*args)`` under ``key`` (one task per key at a time)."""
        if key in self:
            raise ValueError(f"workers: task {key!r} is already there")
        self._added += 1  # the earlier added first among equal priorities
        highest = tuple(-x for x in priority)
        heapq.heappush(self._queue, (highest, self._added, key, fn, args))

    def __contains__(self, key: Key) -> bool:
        return key in self._running or any(task[2] == key for task in self._queue)

    def __len__(self) -> int:
        return len(self._queue) + len(self._running)

    def drop(self, which: Callable[[Key], bool]) -> None:
        """Forget the tasks whose key ``which`` accepts: unstarted, or killed."""
        self._queue = [task for task in self._queue if not which(task[2])]
        heapq.heapify(self._queue)
        for key in [k for k in self._running if which(k)]:
            self._stop(key)

    def next(self) -> tuple[Key, Any]:
        """The key and result of the next task to finish; its exception is raised."""
        while self._queue and len(self._running) < self.count:
            _, _, key, fn, args = heapq.heappop(self._queue)
            receive, send = mp.get_context("fork").Pipe(duplex=False)
            process: BaseProcess = mp.get_context("fork").Process(
                target=_run, args=(os.getpid(), send, fn, args), daemon=True
            )
            process.start()
            send.close()  # the child's end: later children must not hold it open
            self._running[key] = (process, receive)
        if not self._running:
            raise LookupError("workers: no task to wait for")
        ready = wait([conn for _, conn in self._running.values()])
        key = next(k for k, (_, conn) in self._running.items() if conn is ready[0])
        process, conn = self._running.pop(key)
        try:
            ok, value = conn.recv()
        except EOFError:
            process.join()
            ok, value = False, RuntimeError(f"the process of {key!r} ended with {process.exitcode}")
        conn.close()
        process.join()
        if not ok:
            raise value
        return key, value

    def close(self) -> None:
        """Kill every process still running and forget every task."""
        self._queue = []
        for key in list(self._running):
            self._stop(key)

    def _stop(self, key: Key) -> None:
        process, conn = self._running.pop(key)
        process.kill()
        process.join()
        conn.close()


def die_with_parent(parent: int) -> None:
    """In a process forked by ``parent``: have the kernel kill it once ``parent`` ends
    (Linux; elsewhere nothing), so that no solver process outlives a ``verify`` that was
    killed; if ``parent`` is gone already, end now. SIGTERM and SIGHUP end it at once:
    the handlers the command line sets (:func:`replay_contract.cli.stop_as_on_ctrl_c`)
    are for the parent; inherited, they would run only when the worker's Z3 query
    returns, so a pool's ``terminate`` would wait for that query."""
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_DFL)
    if not sys.platform.startswith("linux"):
        return
    set_parent_death_signal = 1  # PR_SET_PDEATHSIG of <linux/prctl.h>
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(set_parent_death_signal, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _run(parent: int, conn: Connection, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    die_with_parent(parent)
    try:
        answer: tuple[bool, Any] = (True, fn(*args))
    except BaseException as exc:  # raised again in the parent
        answer = (False, exc)
    try:
        conn.send(answer)
    except Exception as exc:  # an answer that does not pickle
        conn.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
    finally:
        conn.close()
