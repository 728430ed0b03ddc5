"""One async core, sync forms that work anywhere.

turnkit's I/O is written once, as coroutines. Sync forms run those coroutines on
a private event loop in a daemon thread, so they work from plain scripts *and*
from inside a running loop (notebooks, async web handlers), which
``asyncio.run`` cannot do. Backend objects (LanceDB handles, write locks) live on
that same loop; async callers reach it through :func:`on_loop`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures.thread  # noqa: F401 - registers its exit hook before ours (see _hook_exit)
import contextlib
import contextvars
import functools
import inspect
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from ._errors import UsageError

T = TypeVar("T")
P = ParamSpec("P")
F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "call_maybe_async",
    "cancel_before_exit",
    "exiting",
    "finish_before_exit",
    "loop",
    "named_sync_form",
    "on_loop",
    "run_sync",
    "to_thread",
    "sync_form",
]


_EXIT_WAIT = 10.0  # seconds the interpreter's exit waits for `finish_before_exit` tasks


class _BackgroundLoop:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self.until_exit: set[asyncio.Task[Any]] = set()  # touched on the loop's thread only
        self.cancel_at_exit: set[asyncio.Task[Any]] = set()  # the same
        self.exiting = False
        self._exit_hook_pid: int | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        # A forked child inherits a loop object whose thread does not exist there.
        if self._loop is not None and self._pid == os.getpid() and self._thread and self._thread.is_alive():
            return self._loop
        with self._lock:
            if (
                self._loop is None
                or self._pid != os.getpid()
                or not (self._thread and self._thread.is_alive())
            ):
                new_loop = asyncio.new_event_loop()
                thread = threading.Thread(target=new_loop.run_forever, name="turnkit-loop", daemon=True)
                thread.start()
                self._loop, self._thread, self._pid = new_loop, thread, os.getpid()
                self.until_exit = set()
                self.cancel_at_exit = set()
                self.exiting = False
                self._hook_exit()
            return self._loop

    def _hook_exit(self) -> None:
        if self._exit_hook_pid == os.getpid():
            return
        self._exit_hook_pid = os.getpid()
        # threading's exit hooks run before the runtime finalizes (a LanceDB read still in flight then
        # aborts the process), and the last registered runs first: concurrent.futures.thread, imported
        # at the top of this module, registered its hook (which shuts worker threads to new work)
        # before this one, so the drain runs while `to_thread` still works.
        register = getattr(threading, "_register_atexit", atexit.register)
        with contextlib.suppress(RuntimeError):  # the interpreter is already shutting down
            register(self.wait_at_exit)

    def wait_at_exit(self) -> None:
        """Cancel `cancel_before_exit` tasks; let `finish_before_exit` ones end (up to `_EXIT_WAIT` s)."""
        loop = self._loop
        if loop is None or self._pid != os.getpid() or not (self._thread and self._thread.is_alive()):
            return

        async def drain() -> None:
            self.exiting = True
            dropped = list(self.cancel_at_exit)
            for task in dropped:
                task.cancel()
            waiting = list(self.until_exit) + dropped
            if waiting:
                _, late = await asyncio.wait(waiting, timeout=_EXIT_WAIT)
                for task in late:
                    task.cancel()
                if late:
                    await asyncio.wait(late, timeout=1.0)

        with contextlib.suppress(Exception):  # exiting regardless: a hook must not raise
            asyncio.run_coroutine_threadsafe(drain(), loop).result(timeout=_EXIT_WAIT + 2)

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread


_BG = _BackgroundLoop()


def loop() -> asyncio.AbstractEventLoop:
    """Return turnkit's background event loop, starting it on first use."""
    return _BG.get()


def finish_before_exit(task: asyncio.Task[Any]) -> None:
    """Have the interpreter's exit wait for ``task`` (a task on turnkit's loop), up to 10 s.

    turnkit's loop runs in a daemon thread, which exit does not wait for; a
    task still reading from LanceDB when the runtime finalizes aborts the
    process. For short background work that should end cleanly (reading a
    collection's copy again), not for work that may take minutes.
    """
    _BG.until_exit.add(task)
    task.add_done_callback(_BG.until_exit.discard)


def cancel_before_exit(task: asyncio.Task[Any]) -> None:
    """Have the interpreter's exit cancel ``task`` (a task on turnkit's loop) and wait for it to end.

    For optional background work that may run for many seconds: exit does not
    wait for it to finish, only (up to `_EXIT_WAIT` s) for its cancellation to
    land. Once exit has begun, `exiting` is true and no such work should start.
    """
    if _BG.exiting:
        task.cancel()
    _BG.cancel_at_exit.add(task)
    task.add_done_callback(_BG.cancel_at_exit.discard)


def exiting() -> bool:
    """Whether exit has begun waiting for turnkit's background work, and so none should start.

    It begins when the main thread returns (threading's exit hooks run then,
    before non-daemon threads are joined), and stays set: work that other
    threads start after that could still be reading when the runtime
    finalizes.
    """
    return _BG.exiting


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on turnkit's loop and block until it finishes.

    Works with or without a running event loop in the calling thread.
    """
    if _BG.in_loop_thread():
        coro.close()
        raise UsageError(
            "A sync turnkit call was made from turnkit's own event-loop thread.", code="E_SYNC_IN_LOOP_THREAD"
        )
    future = asyncio.run_coroutine_threadsafe(coro, _BG.get())
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise


def sync_form(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The sync form of the coroutine function ``fn``: same parameters, run with `run_sync`.

    The signature is written once, on ``fn``; type checkers and ``inspect``
    see it on the sync form too.
    """

    def sync(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(fn(*args, **kwargs))

    return named_sync_form(sync, fn, "works inside a running event loop too")


def named_sync_form(sync: F, fn: Callable[..., Any], note: str) -> F:
    """``sync`` named and documented as the sync form of ``fn``, with ``fn``'s signature."""
    sync.__name__, sync.__qualname__ = f"{fn.__name__}_sync", f"{fn.__qualname__}_sync"
    sync.__module__ = fn.__module__
    sync.__doc__ = f"Sync form of `{fn.__name__}` ({note})."
    sync.__wrapped__ = fn  # type: ignore[attr-defined]  # inspect.signature reads fn's parameters
    return sync


async def on_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` on turnkit's loop from any loop (a no-op hop when already there)."""
    bg = _BG.get()
    if asyncio.get_running_loop() is bg:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, bg))


async def to_thread(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`asyncio.to_thread`, except that once the interpreter exits it calls ``fn`` here instead.

    After the main thread returns, worker threads refuse new work, while
    non-daemon threads may still search or build through turnkit: those calls
    then run on the loop, a little slower but not failed.
    """
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    try:
        future = loop.run_in_executor(None, call)
    except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"; fn's own errors pass
        return fn(*args, **kwargs)
    return await future


async def call_maybe_async(fn: Callable[..., T | Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """Call a sync or async callable and return its result.

    Async callables are awaited in the current loop; sync ones run inline (they
    are expected to be quick: hooks, mappers). Use :func:`to_thread` yourself
    for heavy sync work.
    """
    result = fn(*args, **kwargs)
    if inspect.isawaitable(result):
        return await result
    return result
