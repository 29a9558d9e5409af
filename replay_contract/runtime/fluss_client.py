"""The pyfluss client as the Fluss store and backend use it: its configuration, and a
private event loop that bounds every call.

pyfluss is asynchronous and its calls may never return while a server is away (a flush
of a writer that saw the server go, a connection to a stopped tablet server). Every call
therefore runs on :class:`Loop` with a bound; :meth:`Loop.retrying` repeats a call that
failed or took too long until an overall deadline, and the store passes a hook that opens
a new connection before each retry.

pyfluss completes an awaited call from one of its native threads, which takes the GIL,
queues the result on the event loop and wakes the loop by writing to its socket. The main
thread may take the result and run on before that thread has its GIL back; if the main
thread then reaches interpreter shutdown, the native thread, denied the GIL for good,
is ended from under Rust frames and the process aborts (SIGABRT or SIGBUS, once the work
is done: about one run in 15 of ``bench --backend fluss`` did). So the process waits
:data:`EXIT_GRACE` seconds at exit (:mod:`atexit`, before shutdown begins), which lets
such a thread finish; and every object that owns a connection registers its ``close``
to run before that wait, and unregisters it once closed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar

import fluss

from .store import StoreError, StoreUnavailable

RETRY_PAUSE = 0.2
RECONNECT_PAUSE = 0.5
CLOSE_TIMEOUT = 3.0
#: Bound of one attempt of an operation that may safely run twice (a read, a lookup).
ATTEMPT = 5.0
#: Retries of one batch inside pyfluss (unbounded by default, and then a batch for a
#: server that went away keeps a core busy); the store retries on its own.
WRITER_RETRIES = 3

#: Seconds the interpreter waits at exit for pyfluss's threads (see the module docstring).
EXIT_GRACE = 0.1

T = TypeVar("T")


class Flushable(Protocol):
    def flush(self) -> Awaitable[None]: ...


def _grace() -> None:
    time.sleep(EXIT_GRACE)


atexit.register(_grace)  # registered first, so it runs after every close at exit


def client_config(bootstrap: str) -> fluss.Config:
    config = fluss.Config({"bootstrap.servers": bootstrap})
    config.writer_batch_timeout_ms = 0  # the runtime waits for every batch anyway
    config.writer_acks = "all"
    config.writer_retries = WRITER_RETRIES
    return config


class Loop:
    """A private event loop that runs pyfluss coroutines to completion, each bounded."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._loop: asyncio.AbstractEventLoop | None = asyncio.new_event_loop()

    def run(self, make: Callable[[], Coroutine[Any, Any, T]], timeout: float, what: str) -> T:
        """``make()`` run within ``timeout`` seconds; :class:`StoreUnavailable` past it."""
        if self._loop is None:
            raise StoreError(f"{self.where}: the client is closed")

        async def bounded() -> T:
            return await asyncio.wait_for(make(), max(timeout, 0.01))

        try:
            return self._loop.run_until_complete(bounded())
        except TimeoutError:
            raise StoreUnavailable(
                f"{self.where}: {what} did not finish within {timeout:.0f} s"
            ) from None

    def start(self, make: Callable[[], Coroutine[Any, Any, T]]) -> asyncio.Task[T]:
        """``make()`` as a task of this loop, left to run while the caller goes on (it
        advances whenever the loop runs: :meth:`poll`, :meth:`run`)."""
        if self._loop is None:
            raise StoreError(f"{self.where}: the client is closed")
        return self._loop.create_task(make())

    def poll(self) -> None:
        """Let the loop handle what is ready (completions pyfluss queued), then return."""
        if self._loop is not None:
            self._loop.run_until_complete(asyncio.sleep(0))

    def retrying(
        self,
        make: Callable[[], Coroutine[Any, Any, T]],
        deadline: float,
        what: str,
        timeout: float,
        attempt: float | None = None,
        again: Callable[[bool], None] | None = None,
    ) -> T:
        """``make()`` again after each :class:`fluss.FlussError` until ``deadline``; with
        ``attempt``, also after an attempt that takes longer than that (only for what may
        safely run twice). ``again(timed_out)`` runs before each retry."""
        while True:
            remaining = deadline - time.monotonic()
            timed_out = False
            try:
                return self.run(make, min(remaining, attempt or remaining), what)
            except fluss.FlussError as exc:
                why = one_line(exc)
            except StoreUnavailable as exc:
                timed_out = True
                if attempt is None or remaining <= attempt:
                    raise StoreUnavailable(
                        f"{self.where}: {what} did not finish within {timeout:.0f} s"
                    ) from None
                why = str(exc)
            if time.monotonic() + RETRY_PAUSE >= deadline:
                raise StoreUnavailable(
                    f"{self.where}: {what} failed within {timeout:.0f} s ({why})"
                ) from None
            time.sleep(RETRY_PAUSE)
            if again is not None:
                again(timed_out)

    def close(self, closing: Callable[[], Awaitable[None]] | None = None) -> None:
        if self._loop is None:
            return
        if closing is not None:

            async def close() -> None:
                await closing()

            with contextlib.suppress(Exception):
                self._loop.run_until_complete(asyncio.wait_for(close(), CLOSE_TIMEOUT))
        self._loop.close()
        self._loop = None


async def acknowledged(
    handles: Sequence[fluss.WriteResultHandle], *writers: Flushable | None
) -> None:
    """Wait until the server acknowledged every write of ``handles``.

    A writer's ``flush`` sends what is queued and waits until each batch is done, but a
    batch that failed (its retries used up, its table gone) is done too, and ``flush``
    still returns normally: a write it lost would pass for acknowledged. So the flush
    only sends, and each write's own handle says whether it landed (a
    :class:`fluss.FlussError` if not)."""
    await asyncio.gather(*(w.flush() for w in writers if w is not None))
    for handle in handles:
        await handle.wait()


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
