"""The delivery engine: one per worker process (and one in the embedded hub's process), an
event loop that sends webhook deliveries over a pool of kept-alive connections.

It sleeps until woken (a wake-up after a commit that made deliveries, a retry falling due, a
queue it released, the periodic sweep), then claims due config queues up to
PUSH_CONCURRENCY in one statement (`push.claims`) and works each one in a task of its own:
the queue's deliveries in order, one in flight at a time, so a receiver that answers slowly
holds its own queue and nothing else. Outcomes go to a batch that one writer commits
(`push.outcomes`), releasing the queues that are done in the same transaction; while it
writes, the next batch fills. The database is reached from one thread of the engine's own
(the ORM blocks), which keeps its connection while there is work and for HOLD_SECONDS after
(a checkout from the pool, with its health check, was a tenth of the time from a state change
to its webhook), then gives it back.

Wake-ups travel on the bus (`a2ahub.bus`: in this process embedded, over Redis otherwise) and
name the task whose change made deliveries, and its last event: an engine that already works
that task's queue (it sends what was added without a new claim, and asks for more only when a
wake-up for an event past those it loaded came) or has no room for another queue does not
claim for it. Claims, and batches, come at most every GAP_SECONDS: under load one claim takes
the queues of many wake-ups. `a2ahub_push_wakeups_total` counts, by outcome, the claims that
found work or none and the wake-ups that needed no claim.

A receiver that succeeds after failures (a delivery's own, or others' this engine saw) gets
its waiting deliveries made due once the batch is written (`push.receivers`), and every engine
is woken for them: a backlog is sent in seconds, not each delivery at the end of its backoff.
That first success comes within PUSH_PROBE_SECONDS of the receiver's return, with no new
webhook: one queue per failing receiver is retried at least that often (a probe).

What can go wrong, and what happens then:
- the process dies: its leases run out (PUSH_LEASE_SECONDS, renewed while it works), the
  sweep wakes the engines, and whoever claims a lapsed queue records the attempt that was
  lost and sends the first delivery not recorded as delivered again, same `webhook-id`;
- a wake-up is lost (Redis away): the engines claim again when their subscription is back,
  and the sweep finds due queues no one holds;
- the database is away: claims and batches are tried again every second; outcomes wait in
  memory meanwhile (if the leases run out first, the deliveries are sent again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from django.utils import timezone

from a2ahub import bus, metrics, numerals, signing, tracing
from a2ahub.outbound import origin_of
from a2ahub.outbound_pool import OutboundPool, describe
from push import claims, delivery, outcomes, receivers
from push.claims import Claimed, Item, Target
from push.configs import INBOX_PATH
from push.delivery import Result
from push.outcomes import Outcome

logger = logging.getLogger(__name__)

T = TypeVar("T")

# After a failed claim or batch (the database away), the engine tries again this much later.
RETRY_DB_SECONDS = 1.0
# An engine with nothing to do gives its database connection back after this long.
HOLD_SECONDS = 5.0
# Attempt outcomes counted in `a2ahub_push_attempts` (LOST is an attempt the engine did not
# make: it records one a dead process may have made).
COUNTED = (outcomes.DELIVERED, outcomes.RETRY, outcomes.GONE, outcomes.ABANDONED)
# Wake-ups: the task whose commit made deliveries ("": whatever is due, the sweep's).
WAKE_CHANNEL = "a2ahub:push:wake"
# What a wake-up led to: a claim that found queues, one that found none, none needed (the
# engine works the task's queue already, or has no room).
CLAIMED, EMPTY, HELD, FULL = "claimed", "empty", "held", "full"
COUNT_EVERY_SECONDS = 0.5  # wake-ups are added to their metric this often at most
# Claims come no closer together than this, nor do batches: under load each serves more.
GAP_SECONDS = 0.025


class Engine:
    """The engine's state; every method but `wake_threadsafe` runs on its event loop."""

    def __init__(self) -> None:
        self.concurrency = settings.PUSH_CONCURRENCY
        # The hub's own inbox is the one place on the hub a webhook may reach.
        self.pool = OutboundPool(limit=self.concurrency, hub_paths=(INBOX_PATH,))
        self.db = ThreadPoolExecutor(1, thread_name_prefix="a2ahub-push-db")
        self.running: dict[int, asyncio.Task[None]] = {}
        self.tasks: dict[int, str] = {}  # config -> task, of the queues held (running, unwritten)
        # Queues worked whose task was woken for since their claim: only these may have more.
        self.news: set[int] = set()
        # The last event of each queue worked that its claim (or its `more`) loaded: a wake-up
        # for a commit whose events end there brings nothing new. (A task's whole turn is one
        # commit, whose wake-up most often comes after the claim that took its deliveries.)
        self.loaded: dict[int, int] = {}
        self.wakeups: dict[str, int] = {}  # outcome -> count, not yet added to the metric
        self.outcomes: list[Outcome] = []
        self.answers = receivers.Answers()  # what receivers answered, for the batch to judge
        self.probes = receivers.Probes()  # the next early retry at each failing receiver
        self.releases: list[int] = []
        self.unwritten: set[int] = set()  # queues done whose release is not committed yet
        self.loop: asyncio.AbstractEventLoop | None = None
        self.woken: asyncio.Event | None = None
        self.to_write: asyncio.Event | None = None
        self.db_calls = 0
        self.connected_at = 0.0  # the last database call's end; 0: the connection given back
        self.stopping = False
        self.listening: bus.Listening | None = None
        self.thread: threading.Thread | None = None
        self.task: asyncio.Task[None] | None = None  # `run`, on the engine's thread

    @property
    def idle(self) -> bool:
        """Nothing under way: no queue worked, no outcome or release unwritten, no wake-up
        or batch waiting, no database call (read from any thread: a snapshot)."""
        pending = (self.woken is not None and self.woken.is_set()) or (
            self.to_write is not None and self.to_write.is_set()
        )
        busy = self.running or self.outcomes or self.releases or self.unwritten
        return not (busy or pending or self.db_calls)

    # -- waking ----------------------------------------------------------------------------

    def wake(self) -> None:
        if self.woken is not None:
            self.woken.set()

    def hear(self, message: str) -> None:
        """A wake-up from the bus, on the engine's loop: claim only when it may find work."""
        task_id, sequence = woken_for(message)
        held = [config for config, task in self.tasks.items() if task_id and task == task_id]
        if held:
            self.count(HELD)  # its queue loop takes what was added (or claims after release)
            self.news.update(c for c in held if not sequence or sequence > self.loaded.get(c, 0))
        elif len(self.running) >= self.concurrency:
            self.count(FULL)  # a queue that finishes wakes the engine
        else:
            self.wake()

    def count(self, outcome: str) -> None:
        if not self.wakeups and self.loop is not None:
            self.loop.call_later(COUNT_EVERY_SECONDS, self.add_counts)
        self.wakeups[outcome] = self.wakeups.get(outcome, 0) + 1

    def add_counts(self) -> None:
        """Add the wake-ups counted to their metric: one round trip to Redis, off the loop."""
        counts, self.wakeups = [({"outcome": k}, n) for k, n in self.wakeups.items()], {}
        assert self.loop is not None
        self.loop.run_in_executor(None, metrics.shared_counts, "a2ahub_push_wakeups", counts)

    def wake_at(self, when: datetime) -> None:
        """Wake when a retry falls due (a little after, so the claim sees it due)."""
        assert self.loop is not None
        delay = max((when - timezone.now()).total_seconds(), 0.0) + 0.005
        self.loop.call_later(delay, self.wake)

    # -- the database, from the engine's thread --------------------------------------------

    async def in_db(self, fn: Callable[..., T], *args: Any) -> T:
        assert self.loop is not None
        self.db_calls += 1
        try:
            return await self.loop.run_in_executor(self.db, partial(self.call_db, fn, *args))
        finally:
            self.db_calls -= 1

    def call_db(self, fn: Callable[..., T], *args: Any) -> T:
        held, self.connected_at = self.connected_at, time.monotonic()
        try:
            return fn(*args)
        except Exception as exc:
            self.give_back()
            if not held or not isinstance(exc, InterfaceError | OperationalError):
                raise
        # A connection held while idle is dead after the database restarted: once more on a
        # new one, as the claimer and the writer would a second later (a statement that failed
        # to reach the database committed nothing).
        self.connected_at = time.monotonic()
        try:
            return fn(*args)
        except Exception:
            self.give_back()
            raise

    def give_back(self) -> None:
        """On the database thread: give the connection back (to the pool, distributed)."""
        connections.close_all()
        self.connected_at = 0.0

    async def holder(self) -> None:
        """Give the connection back once the engine has had nothing to do for HOLD_SECONDS."""
        while True:
            await asyncio.sleep(HOLD_SECONDS / 2)
            held = self.connected_at and time.monotonic() - self.connected_at >= HOLD_SECONDS
            if held and self.idle:
                await self.in_db(self.give_back)

    # -- the loop --------------------------------------------------------------------------

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.woken, self.to_write = asyncio.Event(), asyncio.Event()
        self.woken.set()  # whatever is due already
        # Subscribed before the first claim: a wake-up lost meanwhile (Redis away) is made up
        # for by a claim once the subscription is back.
        self.listening = await bus.get().subscribe(
            WAKE_CHANNEL, self.hear, decode=bytes.decode, restored=self.wake
        )
        try:
            await asyncio.gather(self.claimer(), self.writer(), self.renewer(), self.holder())
        finally:
            bus.get().unsubscribe(self.listening)
            await self.pool.close()

    async def claimer(self) -> None:
        assert self.woken is not None
        last = 0.0
        while True:
            await self.woken.wait()
            # Under load the wake-ups of a moment are met by one claim of many queues, not by
            # a claim each: a claim costs the database about as much whatever it finds.
            await gap_after(last)
            self.woken.clear()
            free = self.concurrency - len(self.running)
            if free <= 0 or self.stopping:
                continue  # a queue that finishes wakes the engine again
            last = time.monotonic()
            try:
                claimed = await self.in_db(claims.claim, free)
            except Exception:
                logger.exception("push: claiming due queues failed; trying again")
                await asyncio.sleep(RETRY_DB_SECONDS)
                self.wake()
                continue
            self.count(CLAIMED if claimed else EMPTY)
            for queue in claimed:
                self.tasks[queue.target.id] = queue.target.task_id
                self.news.discard(queue.target.id)  # what was woken for before is in the claim
                self.note_loaded(queue.target.id, queue.items)
                self.running[queue.target.id] = asyncio.create_task(self.work(queue))

    async def work(self, queue: Claimed) -> None:
        """Send the queue's deliveries in order, one at a time, until one must wait."""
        target, items = queue.target, queue.items
        handled: list[uuid.UUID] = []
        try:
            if queue.lapsed and items:
                self.lost(items[0])
            while items and await self.send_in_order(target, items, handled):
                if len(handled) >= claims.WINDOW:
                    break  # released, and claimed again: other queues take their turn
                if target.id not in self.news:
                    # No commit woke the engine for its task meanwhile: nothing to ask for (one
                    # whose wake-up comes late, or is lost, is claimed after the release).
                    break
                self.news.discard(target.id)
                # Events committed while these were sent: on at once, without a new claim.
                items = await self.in_db(claims.more, target.id, handled)
                self.note_loaded(target.id, items)
        except Exception:  # a bug, not a receiver's failure: the lease will run out
            logger.exception("push: working the queue of config %s failed", target.id)
            self.tasks.pop(target.id, None)
        else:
            self.unwritten.add(target.id)
            self.releases.append(target.id)
            self.written_soon()
            if len(self.running) == self.concurrency:
                self.wake()  # it was full: a due queue may have waited for this place
        self.running.pop(target.id, None)
        self.news.discard(target.id)  # the release's wake-up claims whatever came since
        self.loaded.pop(target.id, None)

    async def send_in_order(
        self, target: Target, items: list[Item], handled: list[uuid.UUID]
    ) -> bool:
        """Send `items` one after another; False when the queue must stop (a retry to wait
        for, a receiver gone)."""
        for item in items:
            if item.next_attempt_at > timezone.now():
                self.wake_at(item.next_attempt_at)
                return False
            handled.append(item.id)
            if not await self.attempt(target, item):
                return False
        return True

    def note_loaded(self, config_id: int, items: list[Item]) -> None:
        if items:
            last = max(item.sequence for item in items)
            self.loaded[config_id] = max(last, self.loaded.get(config_id, 0))

    def lost(self, item: Item) -> None:
        """A lapsed lease: whoever held the queue may have sent its first delivery and died
        before recording it. Recorded as an attempt; it is sent again now."""
        item.attempts += 1
        self.record(Outcome(item.id, item.config_id, outcomes.LOST, timezone.now(),
                            error=outcomes.LOST_ERROR))  # fmt: skip

    async def attempt(self, target: Target, item: Item) -> bool:
        """One attempt of one delivery, its outcome recorded; True when the queue goes on."""
        if tracing.enabled:
            with delivery_span(target, item):
                go_on = await self.attempted(target, item)
                tracing.annotate(a2a__push__outcome=self.outcomes[-1].kind if self.outcomes
                                 else "")  # fmt: skip
                return go_on
        return await self.attempted(target, item)

    async def attempted(self, target: Target, item: Item) -> bool:
        started, clock = timezone.now(), time.monotonic()
        try:
            if delivery.needs_task(target):
                body, content_type = await self.in_db(delivery.task_body, target)
            else:
                body, content_type = delivery.event_body(item)
            signer = signing.cached_signer()
            if signer is None:  # read the key off the loop (once every KEY_CACHE_SECONDS)
                signer = await self.in_db(signing.current_signer)
            headers = delivery.build_headers(
                target, item, body, content_type, signer, signing.issuer()
            )
            response = await self.pool.post(
                target.url, content=body, headers=headers, timeout=settings.PUSH_TIMEOUT_SECONDS
            )
            result = delivery.classify(response.status_code, response.headers, response.content)
        except Exception as exc:  # every failure to reach the receiver is worth a retry
            result = Result(delivery.RETRY, error=describe(exc))
        item.attempts += 1
        origin = origin_of(target.url)
        if result.kind != delivery.GONE:  # a 410 is the config's end, not the receiver's
            self.answers.add(origin, result.kind == delivery.DELIVERED, item.attempts)
        outcome = Outcome(
            item.id, item.config_id, result.kind, started,
            duration_ms=int((time.monotonic() - clock) * 1000), status=result.status,
            error=result.error, excerpt=result.excerpt,
        )  # fmt: skip
        go_on = True
        if result.kind == delivery.RETRY:
            retry_at = None if item.test else self.probes.retry_at(origin, item, result)
            if retry_at is None:
                outcome.kind = outcomes.ABANDONED  # later events still deserve their own tries
            else:
                outcome.retry_at = retry_at
                self.wake_at(retry_at)
                go_on = False
        elif result.kind == delivery.GONE:
            go_on = False
        self.record(outcome)
        return go_on

    # -- writing outcomes ------------------------------------------------------------------

    def record(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.written_soon()

    def written_soon(self) -> None:
        if self.to_write is not None:
            self.to_write.set()

    async def writer(self) -> None:
        """Commit what came in since the last batch; while one is written the next fills."""
        assert self.to_write is not None
        last = 0.0
        while True:
            await self.to_write.wait()
            await gap_after(last)  # as claims: a batch costs much the same whatever its size
            last = time.monotonic()
            self.to_write.clear()
            batch, releases = self.outcomes, self.releases
            self.outcomes, self.releases = [], []
            if not batch and not releases:
                continue
            try:
                await self.in_db(write_batch, batch, releases)
            except Exception:
                logger.exception("push: writing %d outcomes failed; trying again", len(batch))
                self.outcomes[:0], self.releases[:0] = batch, releases
                await asyncio.sleep(RETRY_DB_SECONDS)
                self.written_soon()
                continue
            self.unwritten.difference_update(releases)
            for config_id in releases:
                if config_id not in self.running:
                    self.tasks.pop(config_id, None)
                    self.news.discard(config_id)
            if releases:
                self.wake()  # a released queue may have more due (a full window, new events)
            await self.make_due(self.answers.take())

    async def make_due(self, back: list[str]) -> None:
        """After a batch (its releases committed): the deliveries waiting at receivers that
        answer again are due now, and every engine hears of them (this one too)."""
        if not back:
            return
        try:
            moved = await self.in_db(receivers.make_due_at, back)
        except Exception:  # their retries come at their own time, or with the next success
            logger.exception("push: making the deliveries waiting at %s due failed", back)
            return
        if moved:
            logger.info("push: %s answers again: %d waiting deliveries are due", back, moved)
            wake(on_loop=True)

    async def shutdown(self, timeout: float) -> None:
        self.stopping = True
        if self.running:
            await asyncio.wait(list(self.running.values()), timeout=timeout)
        for task in self.running.values():
            task.cancel()  # its lease runs out; the next claim records the attempt as lost
        batch, releases = self.outcomes, self.releases
        self.outcomes, self.releases = [], []
        if batch or releases:
            await self.in_db(write_batch, batch, releases)
        await self.in_db(self.give_back)

    async def renewer(self) -> None:
        """Keep the leases of the queues this engine holds while it works them."""
        while True:
            await asyncio.sleep(settings.PUSH_LEASE_SECONDS / 3)
            held = [*self.running, *self.unwritten]
            if held:
                try:
                    await self.in_db(claims.renew, held)
                except Exception:
                    logger.exception("push: renewing %d leases failed", len(held))


async def gap_after(last: float) -> None:
    """Wait until GAP_SECONDS have passed since `last` (a `time.monotonic()`)."""
    if (wait := last + GAP_SECONDS - time.monotonic()) > 0:
        await asyncio.sleep(wait)


def delivery_span(target: Target, item: Item) -> Any:
    """A delivery attempt's span: the first one in the trace of the call that made the task
    (its receiver reads that trace's `traceparent`), a retry in a trace of its own linked to
    it, not a child of a request long gone."""
    attributes = {"a2a.task.id": target.task_id, "a2a.push.delivery": str(item.id),
                  "a2a.push.attempt": item.attempts + 1, "url.full": target.url}  # fmt: skip
    if item.attempts == 0 and target.traceparent:
        return tracing.span("a2a.push.deliver", "CLIENT", attributes, parent=target.traceparent)
    return tracing.span("a2a.push.deliver", "CLIENT", attributes, links_to=(target.traceparent,),
                        parent="")  # fmt: skip


def write_batch(batch: list[Outcome], releases: list[int]) -> None:
    outcomes.record(batch, releases)
    counted = Counter(outcome.kind for outcome in batch if outcome.kind in COUNTED)
    metrics.shared_counts("a2ahub_push_attempts", [({"outcome": k}, n) for k, n in counted.items()])


# -- where engines run -----------------------------------------------------------------------

_engine: Engine | None = None
_started = threading.Lock()


def start() -> Engine:
    """Start this process's engine on a thread of its own (once); the engine."""
    global _engine
    with _started:
        if _engine is None:
            engine = Engine()
            ready = threading.Event()

            def serve() -> None:
                async def main() -> None:
                    engine.task = asyncio.create_task(engine.run())
                    await asyncio.sleep(0)
                    ready.set()
                    with contextlib.suppress(asyncio.CancelledError):
                        await engine.task  # cancelled by `stop`

                asyncio.run(main())

            engine.thread = threading.Thread(target=serve, name="a2ahub-push", daemon=True)
            engine.thread.start()
            ready.wait(10)
            _engine = engine
        return _engine


def running() -> Engine | None:
    return _engine


def stop(timeout: float = 10.0) -> None:
    """Stop claiming, let the queues under way finish (for `timeout` at most), write what is
    left, give the connection back and end the engine's thread (a later `start` makes a new
    engine): a worker shutting down, the end of a test."""
    global _engine
    with _started:
        engine, _engine = _engine, None
    if engine is None or engine.loop is None or not engine.loop.is_running():
        return
    done = asyncio.run_coroutine_threadsafe(engine.shutdown(timeout), engine.loop)
    try:
        done.result(timeout + 5)
    except Exception:
        logger.exception("push: the engine did not stop cleanly")
    # Its claims and subscription end with its loop: a wake-up heard later (another
    # process's, over Redis) finds no engine here to claim into a database it may not reach.
    if engine.task is not None:
        engine.loop.call_soon_threadsafe(engine.task.cancel)
    if engine.thread is not None:
        engine.thread.join(timeout=5)
    engine.db.shutdown(wait=False)


def wait_idle(timeout: float = 10.0) -> bool:
    """Whether this process's engine (if it has one) is at rest, waiting up to `timeout` for
    it: what a test needs before its data is deleted under the engine's writes."""
    deadline = time.monotonic() + timeout
    while _engine is not None and not _engine.idle:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def wake(task_id: str = "", sequence: int = 0, on_loop: bool = False) -> None:
    """After a commit that made deliveries for the task ("": whatever is due), whose last
    event is `sequence` (0: not known): the engines that could send them claim them. A Redis
    that is away loses the wake-up, not the deliveries (the sweep finds them). `on_loop`:
    called from an event loop, which must not wait on Redis (the task writer's `committed`
    hook, after a write on the loop)."""
    if not bus.get().distributed:
        start()  # the embedded hub's own engine, started at the first wake-up
    if on_loop:
        bus.get().publish_soon(WAKE_CHANNEL, wake_message(task_id, sequence))
    else:
        bus.get().publish(WAKE_CHANNEL, wake_message(task_id, sequence))


def wake_message(task_id: str, sequence: int) -> str:
    return f"{task_id} {sequence}" if task_id and sequence else task_id


def woken_for(message: str) -> tuple[str, int]:
    """A wake-up's task and last event (0: not known; a bare task id, as hubs before this
    one send it, too)."""
    task_id, _, sequence = message.partition(" ")
    return task_id, numerals.whole_number(sequence) or 0
