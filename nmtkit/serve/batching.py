"""Dynamic batching: the sentences of concurrent requests translated together.

Requests wait in a queue; a single worker takes the first, gathers for at
most ``wait`` seconds whatever else arrives with the same search options,
up to ``max_sentences`` sentences, translates them as one block in a thread
(so the event loop keeps accepting requests), and hands each request its
own results. The model is used by that one thread only. A request whose
client went away before its batch began is not translated, and a batch whose
clients have all gone away stops at the end of the search's next block: under
load, a client that gives up would otherwise still cost the model its
sentences.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..translate.translation import Translation


@dataclass(frozen=True)
class Beside:
    """What a request gives beside each of its lines (None: nothing of that kind for any)."""

    constraints: list[list[str]] | None = None  # the phrases each translation must hold
    prefixes: list[str] | None = None  # the start each translation must have

    @staticmethod
    def joined(parts: list[tuple[int, Beside]]) -> Beside:
        """One batch's, from its requests' (each with its number of lines): a line of a request
        that gave nothing of a kind the others gave gets that kind's nothing."""
        constraints = _joined([(n, b.constraints) for n, b in parts], [])
        return Beside(constraints, _joined([(n, b.prefixes) for n, b in parts], ""))


T = TypeVar("T")


def _joined(parts: list[tuple[int, list[T] | None]], nothing: T) -> list[T] | None:
    if all(given is None for _, given in parts):
        return None
    return [x for n, given in parts for x in (given if given is not None else [nothing] * n)]


# the lines, the key of their options, what is given beside them, and what to tell of each block
# of the search as it ends (how many lines it translated: translate_block's ``done``)
Translate = Callable[[list[str], Hashable, Beside, Callable[[int], object]], list[Translation]]


class _Abandoned(Exception):
    """Raised between the search's blocks when every client of the batch has gone away, after
    ``translated`` of its sentences."""

    def __init__(self, translated: int):
        super().__init__(f"abandoned after {translated} sentences")
        self.translated = translated


@dataclass
class _Request:
    lines: list[str]
    key: Hashable  # requests with equal keys share a batch
    done: asyncio.Future[list[Translation]] = field(repr=False)
    beside: Beside = Beside()


class Batcher:
    def __init__(self, translate: Translate, max_sentences: int = 64, wait: float = 0.005):
        self.translate, self.max_sentences, self.wait = translate, max_sentences, wait
        self.queue: asyncio.Queue[_Request] = asyncio.Queue()
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="nmtkit-model")
        self.batches = self.sentences = 0  # served so far (GET /info)
        self.abandoned = 0  # sentences left untranslated: their clients went away first
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._serve())

    async def stop(self) -> None:
        """Not waiting for the batch the model thread computes: a long search (minutes, for a
        sentence of hundreds of phrases) held the server's exit past --shutdown-wait and a second
        Ctrl-C. SIGTERM then ends the process under it, and a Ctrl-C's exit does not wait for it."""
        if self._task is not None:
            self._task.cancel()
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def submit(
        self,
        lines: Sequence[str],
        key: Hashable,
        beside: Beside = Beside(),
        gone: Callable[[], Awaitable[object]] | None = None,
    ) -> list[Translation] | None:
        """The translations of ``lines`` under the options ``key`` stands for, each holding its
        phrases and beginning with its prefix where ``beside`` gives them; None where ``gone``
        (which returns when the client has gone away) returns first."""
        request = _Request(list(lines), key, asyncio.get_running_loop().create_future(), beside)
        await self.queue.put(request)
        if gone is None:
            return await request.done
        watch = asyncio.ensure_future(gone())
        try:
            waits: set[asyncio.Future[Any]] = {request.done, watch}
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the server stops: as ``await request.done`` would, cancel it
            request.done.cancel()
            raise
        finally:
            watch.cancel()
        if request.done.done():
            return request.done.result()
        request.done.cancel()  # its batch, not yet begun, leaves it out; one under way goes on
        return None

    async def _serve(self) -> None:
        later: deque[_Request] = deque()  # other options than the batch being gathered
        loop = asyncio.get_running_loop()
        while True:
            first = later.popleft() if later else await self.queue.get()
            if self._left(first):
                continue
            batch = [r for r in await self._gathered(first, later) if not self._left(r)]  # gone meanwhile
            if not batch:
                continue
            lines = [line for r in batch for line in r.lines]
            try:
                out = await loop.run_in_executor(self.executor, self._translated, batch, lines, first.key)
            except _Abandoned as cut:  # searched in part, or not at all
                self.batches += bool(cut.translated)
                self.sentences += cut.translated
                continue
            except Exception as err:  # one bad batch must not stop the server
                for r in batch:
                    if not r.done.done():
                        r.done.set_exception(err)
                continue
            self.batches, self.sentences = self.batches + 1, self.sentences + len(lines)
            start = 0
            for r in batch:
                if not r.done.done():  # a client that went away
                    r.done.set_result(out[start : start + len(r.lines)])
                start += len(r.lines)

    def _translated(self, batch: list[_Request], lines: list[str], key: Hashable) -> list[Translation]:
        """The batch's translations, on the model's thread; :class:`_Abandoned` once its clients
        have all gone away, the sentences not yet translated counted."""
        translated = 0

        def done(n: int) -> None:
            nonlocal translated
            translated += n
            # cancelled() reads the state the event loop's thread sets: a flag, safe to read here
            if translated < len(lines) and all(r.done.cancelled() for r in batch):
                self.abandoned += len(lines) - translated
                raise _Abandoned(translated)

        return self.translate(lines, key, Beside.joined([(len(r.lines), r.beside) for r in batch]), done)

    async def _gathered(self, first: _Request, later: deque[_Request]) -> list[_Request]:
        """``first`` and the requests with its options, those already waiting in ``later`` (in
        their order) and those that arrive within the wait, up to the batch's size; those with
        other options wait in ``later``."""
        batch, waiting = [first], list(later)
        later.clear()
        for r in waiting:
            self._sort(r, batch, later)
        deadline = time.monotonic() + self.wait
        while sum(len(r.lines) for r in batch) < self.max_sentences:
            left = deadline - time.monotonic()
            try:
                nxt = self.queue.get_nowait() if left <= 0 else await asyncio.wait_for(self.queue.get(), left)
            except (TimeoutError, asyncio.QueueEmpty):
                break
            self._sort(nxt, batch, later)
        return batch

    def _sort(self, request: _Request, batch: list[_Request], later: deque[_Request]) -> None:
        """``request`` into the batch where it has the batch's options and fits, else into
        ``later``; dropped where its client went away."""
        if self._left(request):
            return
        size = sum(len(r.lines) for r in batch)
        if request.key == batch[0].key and size + len(request.lines) <= self.max_sentences:
            batch.append(request)
        else:
            later.append(request)

    def _left(self, request: _Request) -> bool:
        """Whether the request's client went away (its answer cancelled), counted: each caller
        drops a request this says True of, so it is counted once."""
        if request.done.cancelled():
            self.abandoned += len(request.lines)
        return request.done.cancelled()
