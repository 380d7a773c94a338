"""The micro-batcher on its own: batching, admission control, deadlines, failure isolation, the
finite-rows check, follow-ups, draining."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest
from PIL import Image

from service.engine.encode.batcher import Batcher, BatchLimits, EncodeResult
from service.exceptions import InvalidQueryError, OverloadedError, ShuttingDownError
from service.http.errors import STATUS_OF, ErrorCode, code_of
from service.metrics import ServiceMetrics
from tests.fakes.fake_encoders import COLOURS, FAKE_DIM, FakeImageEncoder, FakeTextEncoder

DIM = 4


@dataclass
class GatedEncoder:
    """Embeds a number ``n`` as ``[n, n, n, n]``; records each call's inputs. While ``gate`` is
    clear, calls wait for it (``entered`` is set once one is waiting). ``fail_on`` makes any
    call holding that number raise."""

    gate: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    calls: list[list[int]] = field(default_factory=list)
    fail_on: int | None = None

    def __call__(self, inputs: Sequence[int]) -> np.ndarray:
        self.calls.append(list(inputs))
        self.entered.set()
        assert self.gate.wait(timeout=10), "the test never opened the gate"
        if self.fail_on is not None and self.fail_on in inputs:
            raise RuntimeError("bad input")
        return np.repeat(np.asarray(inputs, dtype=np.float32)[:, None], DIM, axis=1)


def limits(**changes: float) -> BatchLimits:
    values: dict[str, float] = {
        "max_batch_size": 8,
        "max_wait_s": 0.0,
        "max_queue_depth": 16,
        "retry_after_s": 3,
        "workers": 1,
    }
    values.update(changes)
    return BatchLimits(
        max_batch_size=int(values["max_batch_size"]),
        max_wait_s=values["max_wait_s"],
        max_queue_depth=int(values["max_queue_depth"]),
        retry_after_s=int(values["retry_after_s"]),
        workers=int(values["workers"]),
    )


def make(encoder: GatedEncoder, **changes: float) -> tuple[Batcher[int], ServiceMetrics]:
    metrics = ServiceMetrics()
    return Batcher(encoder, limits(**changes), metrics, variant="v", tower="text"), metrics


def metric(metrics: ServiceMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def wait_until(condition: object, timeout_s: float = 5.0) -> None:
    deadline = time.perf_counter() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.perf_counter() < deadline, "condition never became true"
        await asyncio.sleep(0.002)


async def fill_behind_a_running_batch(
    batcher: Batcher[int], encoder: GatedEncoder, groups: list[list[int]]
) -> list[asyncio.Task[EncodeResult]]:
    """Submit ``[0]`` (which blocks in the encoder), then ``groups`` while it runs."""
    first = asyncio.create_task(batcher.submit([0], math.inf))
    await wait_until(encoder.entered.is_set)
    tasks = [asyncio.create_task(batcher.submit(group, math.inf)) for group in groups]
    await wait_until(lambda: batcher.queue_depth == len(groups))
    return [first, *tasks]


def test_requests_queued_while_the_encoder_runs_share_one_call() -> None:
    encoder = GatedEncoder()
    batcher, metrics = make(encoder)

    async def scenario() -> list[EncodeResult]:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [[1], [2, 3], [4]])
        encoder.gate.set()
        return list(await asyncio.gather(*tasks))

    results = asyncio.run(scenario())
    assert encoder.calls == [[0], [1, 2, 3, 4]]
    # Each request gets exactly its own rows, in its own order.
    assert [result.rows[:, 0].tolist() for result in results] == [[0], [1], [2, 3], [4]]
    assert [result.batch_requests for result in results] == [1, 3, 3, 3]
    assert results[1].batch_inputs == 4
    assert all(result.queue_s >= 0 and result.encode_s >= 0 for result in results)
    labels = {"variant": "v", "tower": "text"}
    assert metric(metrics, "crisscross_encode_batch_requests_count", **labels) == 2
    assert metric(metrics, "crisscross_encode_batch_requests_sum", **labels) == 4
    assert metric(metrics, "crisscross_encode_batch_size_sum", **labels) == 5
    assert metric(metrics, "crisscross_encode_queue_wait_seconds_count", **labels) == 4
    assert metric(metrics, "crisscross_encode_queue_depth", **labels) == 0


def test_a_batch_holds_at_most_max_batch_size_inputs() -> None:
    encoder = GatedEncoder()
    batcher, _ = make(encoder, max_batch_size=3)

    async def scenario() -> None:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [[1, 2], [3], [4], [5, 6, 7]])
        encoder.gate.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())
    assert encoder.calls == [[0], [1, 2, 3], [4], [5, 6, 7]]


def test_a_request_larger_than_a_batch_runs_alone_and_whole() -> None:
    encoder = GatedEncoder()
    encoder.gate.set()
    batcher, _ = make(encoder, max_batch_size=2)
    result = asyncio.run(batcher.submit(list(range(1, 6)), math.inf))
    assert encoder.calls == [[1, 2, 3, 4, 5]]
    assert result.rows.shape == (5, DIM)


def test_the_batcher_waits_max_wait_for_company() -> None:
    encoder = GatedEncoder()
    encoder.gate.set()
    batcher, _ = make(encoder, max_wait_s=1.0)

    async def scenario() -> None:
        first = asyncio.create_task(batcher.submit([1], math.inf))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(batcher.submit([2], math.inf))
        await asyncio.gather(first, second)

    started = time.perf_counter()
    asyncio.run(scenario())
    assert encoder.calls == [[1, 2]]
    # A full batch does not wait out max_wait_s; this one was never full, so it did.
    assert time.perf_counter() - started >= 0.95


def test_a_full_batch_does_not_wait() -> None:
    encoder = GatedEncoder()
    encoder.gate.set()
    batcher, _ = make(encoder, max_wait_s=5.0, max_batch_size=2)
    started = time.perf_counter()
    asyncio.run(batcher.submit([1, 2], math.inf))
    assert time.perf_counter() - started < 2.0


def test_a_full_queue_refuses_at_once_with_retry_after() -> None:
    encoder = GatedEncoder()
    batcher, metrics = make(encoder, max_queue_depth=2)

    async def scenario() -> OverloadedError:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [[1], [2]])
        with pytest.raises(OverloadedError) as refused:
            await batcher.submit([3], math.inf)
        encoder.gate.set()
        await asyncio.gather(*tasks)
        return refused.value

    error = asyncio.run(scenario())
    assert code_of(error) is ErrorCode.OVERLOADED
    assert STATUS_OF[code_of(error)] == 503
    assert error.retry_after_s == 3
    assert "max_queue_depth=2" in error.message
    assert [3] not in encoder.calls
    assert metric(metrics, "crisscross_requests_refused_total", reason="queue_full") == 1


def test_work_whose_deadline_passes_in_the_queue_is_dropped_not_computed() -> None:
    encoder = GatedEncoder()
    batcher, metrics = make(encoder)

    async def scenario() -> OverloadedError:
        first = asyncio.create_task(batcher.submit([0], math.inf))
        await wait_until(encoder.entered.is_set)
        late = asyncio.create_task(batcher.submit([7], time.perf_counter() + 0.05))
        with pytest.raises(OverloadedError) as refused:
            await late
        assert batcher.queue_depth == 0  # it left the queue as its deadline passed
        encoder.gate.set()
        await first
        return refused.value

    started = time.perf_counter()
    error = asyncio.run(scenario())
    assert time.perf_counter() - started < 5
    assert code_of(error) is ErrorCode.OVERLOADED
    assert error.retry_after_s == 3
    assert "deadline" in error.message
    assert encoder.calls == [[0]]  # 7 was never encoded
    assert metric(metrics, "crisscross_requests_refused_total", reason="deadline") == 1


def test_an_expired_request_is_refused_before_queueing() -> None:
    batcher, _ = make(GatedEncoder())
    with pytest.raises(OverloadedError, match="deadline") as refused:
        asyncio.run(batcher.submit([1], time.perf_counter() - 1))
    assert code_of(refused.value) is ErrorCode.OVERLOADED


def test_work_already_running_when_the_deadline_passes_still_answers() -> None:
    encoder = GatedEncoder()
    batcher, _ = make(encoder)

    async def scenario() -> EncodeResult:
        # A deadline the batch surely starts before, even on a starved machine; then wait
        # past it while the batch runs.
        deadline = time.perf_counter() + 2.0
        task = asyncio.create_task(batcher.submit([5], deadline))
        await wait_until(encoder.entered.is_set)
        await asyncio.sleep(max(0.0, deadline - time.perf_counter()) + 0.05)
        assert time.perf_counter() > deadline
        encoder.gate.set()
        return await task

    assert asyncio.run(scenario()).rows.tolist() == [[5.0] * DIM]


def test_a_failing_input_fails_only_its_own_request() -> None:
    encoder = GatedEncoder(fail_on=13)
    batcher, _ = make(encoder)

    async def scenario() -> list[EncodeResult | BaseException]:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [[1], [13], [2]])
        encoder.gate.set()
        return list(await asyncio.gather(*tasks, return_exceptions=True))

    _, good, bad, other = asyncio.run(scenario())
    assert isinstance(bad, RuntimeError)
    assert isinstance(good, EncodeResult)
    assert isinstance(other, EncodeResult)
    assert good.rows[0, 0] == 1
    assert other.rows[0, 0] == 2
    # The shared call failed, then each request of it was retried alone.
    assert encoder.calls == [[0], [1, 13, 2], [1], [13], [2]]


def test_an_encoder_answering_the_wrong_number_of_rows_is_an_error() -> None:
    metrics = ServiceMetrics()
    batcher: Batcher[int] = Batcher(
        lambda inputs: np.zeros((len(inputs) + 1, DIM), dtype=np.float32),
        limits(),
        metrics,
        variant="v",
        tower="text",
    )
    with pytest.raises(RuntimeError, match="shape"):
        asyncio.run(batcher.submit([1], math.inf))


def test_a_cancelled_request_leaves_the_queue_unencoded() -> None:
    encoder = GatedEncoder()
    batcher, _ = make(encoder)

    async def scenario() -> None:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [[1], [2]])
        tasks[1].cancel()
        await wait_until(lambda: batcher.queue_depth == 1)
        encoder.gate.set()
        await asyncio.gather(tasks[0], tasks[2])

    asyncio.run(scenario())
    assert encoder.calls == [[0], [2]]


def test_requests_from_several_event_loops_are_served() -> None:
    encoder = GatedEncoder()
    encoder.gate.set()
    batcher, _ = make(encoder, max_wait_s=0.01)
    answers: dict[int, float] = {}

    def client(number: int) -> None:
        result = asyncio.run(batcher.submit([number], math.inf))
        answers[number] = float(result.rows[0, 0])

    threads = [threading.Thread(target=client, args=(n,)) for n in range(1, 6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert answers == {n: float(n) for n in range(1, 6)}


def test_close_finishes_queued_work_then_refuses_new_work() -> None:
    encoder = GatedEncoder()
    batcher, metrics = make(encoder)

    async def scenario() -> list[EncodeResult]:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [[1], [2]])
        closing = asyncio.create_task(batcher.close(timeout_s=10))
        await asyncio.sleep(0.05)
        with pytest.raises(ShuttingDownError, match="shutting down") as refused:
            await batcher.submit([3], math.inf)
        assert code_of(refused.value) is ErrorCode.NOT_READY
        encoder.gate.set()
        results = list(await asyncio.gather(*tasks))
        await closing
        return results

    results = asyncio.run(scenario())
    assert [result.rows[0, 0] for result in results] == [0, 1, 2]
    assert encoder.calls == [[0], [1, 2]]
    assert metric(metrics, "crisscross_requests_refused_total", reason="shutting_down") == 1


def test_close_gives_up_after_its_timeout_and_answers_what_is_left() -> None:
    encoder = GatedEncoder()  # never opened: the running batch hangs
    batcher, _ = make(encoder)

    async def scenario() -> EncodeResult | BaseException:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [[1]])
        started = time.perf_counter()
        await batcher.close(timeout_s=0.2)
        assert time.perf_counter() - started < 2
        waiting = await asyncio.gather(tasks[1], return_exceptions=True)
        tasks[0].cancel()
        await asyncio.gather(tasks[0], return_exceptions=True)
        return waiting[0]

    left = asyncio.run(scenario())
    encoder.gate.set()
    assert isinstance(left, ShuttingDownError)
    assert code_of(left) is ErrorCode.NOT_READY


def test_two_workers_run_two_batches_side_by_side() -> None:
    encoder = GatedEncoder()
    batcher, _ = make(encoder, workers=2)

    async def scenario() -> list[EncodeResult]:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [])
        tasks.append(asyncio.create_task(batcher.submit([1, 2], math.inf)))
        # The second worker takes [1, 2] while the first is still inside the encoder.
        await wait_until(lambda: len(encoder.calls) == 2)
        assert batcher.queue_depth == 0
        encoder.gate.set()
        return list(await asyncio.gather(*tasks))

    results = asyncio.run(scenario())
    assert encoder.calls == [[0], [1, 2]]
    assert [result.rows[:, 0].tolist() for result in results] == [[0], [1, 2]]


def test_close_waits_for_every_worker() -> None:
    encoder = GatedEncoder()
    batcher, _ = make(encoder, workers=3, max_batch_size=1)

    async def scenario() -> list[EncodeResult]:
        tasks = [asyncio.create_task(batcher.submit([n], math.inf)) for n in range(3)]
        await wait_until(lambda: len(encoder.calls) == 3)
        closing = asyncio.create_task(batcher.close(timeout_s=10))
        await asyncio.sleep(0.05)
        assert not closing.done()  # three batches are still inside the encoder
        encoder.gate.set()
        await closing
        return list(await asyncio.gather(*tasks))

    results = asyncio.run(scenario())
    assert sorted(result.rows[0, 0] for result in results) == [0, 1, 2]
    assert sorted(map(tuple, encoder.calls)) == [(0,), (1,), (2,)]


def test_a_follow_up_runs_on_the_worker_thread_on_its_own_rows() -> None:
    encoder = GatedEncoder()
    batcher, _ = make(encoder)
    seen: list[tuple[str, list[float]]] = []

    def total(rows: np.ndarray) -> float:
        seen.append((threading.current_thread().name, rows[:, 0].tolist()))
        return float(rows.sum())

    async def scenario() -> list[EncodeResult]:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [])
        tasks += [
            asyncio.create_task(batcher.submit(group, math.inf, total)) for group in ([1, 2], [3])
        ]
        await wait_until(lambda: batcher.queue_depth == 2)
        encoder.gate.set()
        return list(await asyncio.gather(*tasks))

    results = asyncio.run(scenario())
    assert encoder.calls == [[0], [1, 2, 3]]
    assert [result.follow_up for result in results] == [None, 12.0, 12.0]
    assert sorted(values for _, values in seen) == [[1.0, 2.0], [3.0]]
    assert {name for name, _ in seen} == {"encode-v-text-0"}
    assert results[0].follow_up_s == 0.0
    assert all(result.follow_up_s > 0 for result in results[1:])


def test_a_failing_follow_up_fails_only_its_own_request() -> None:
    encoder = GatedEncoder()
    batcher, _ = make(encoder)

    def refuse_three(rows: np.ndarray) -> int:
        if 3 in rows[:, 0]:
            raise InvalidQueryError("three is refused")
        return len(rows)

    async def scenario() -> list[EncodeResult | BaseException]:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [])
        tasks += [
            asyncio.create_task(batcher.submit(group, math.inf, refuse_three))
            for group in ([1, 2], [3])
        ]
        await wait_until(lambda: batcher.queue_depth == 2)
        encoder.gate.set()
        return list(await asyncio.gather(*tasks, return_exceptions=True))

    _, kept, refused = asyncio.run(scenario())
    assert isinstance(kept, EncodeResult)
    assert kept.follow_up == 2
    assert isinstance(refused, InvalidQueryError)
    assert code_of(refused) is ErrorCode.INVALID_INPUT
    # The batch itself succeeded: it was not retried request by request.
    assert encoder.calls == [[0], [1, 2, 3]]


@dataclass(eq=False)
class Summed:
    """A grouped follow-up: the sum of its rows; ``group`` None runs alone. ``calls`` records
    each call (``alone`` or ``together`` with how many)."""

    group: str | None
    calls: list[tuple[str, int]]
    fail: bool = False

    def __call__(self, rows: np.ndarray) -> float:
        self.calls.append(("alone", 1))
        return float(rows.sum())

    def run_together(
        self, follow_ups: Sequence[object], rows: Sequence[np.ndarray]
    ) -> list[object]:
        self.calls.append(("together", len(follow_ups)))
        if self.fail:
            raise RuntimeError("the group failed")
        return [float(part.sum()) * 10 for part in rows]


def _grouped_batch(follow_ups: list[Summed]) -> list[EncodeResult | BaseException]:
    encoder = GatedEncoder()
    batcher, _ = make(encoder)

    async def scenario() -> list[EncodeResult | BaseException]:
        tasks = await fill_behind_a_running_batch(batcher, encoder, [])
        tasks += [
            asyncio.create_task(batcher.submit([n + 1], math.inf, follow_up))
            for n, follow_up in enumerate(follow_ups)
        ]
        await wait_until(lambda: batcher.queue_depth == len(follow_ups))
        encoder.gate.set()
        return list(await asyncio.gather(*tasks, return_exceptions=True))

    results = asyncio.run(scenario())
    assert encoder.calls == [[0], list(range(1, len(follow_ups) + 1))]
    return results[1:]


def test_grouped_follow_ups_of_one_batch_run_in_one_call() -> None:
    calls: list[tuple[str, int]] = []
    follow_ups = [
        Summed("a", calls),
        Summed("b", calls),
        Summed("a", calls),
        Summed(None, calls),
        Summed("a", calls),
    ]
    results = _grouped_batch(follow_ups)
    values = [r.follow_up for r in results if isinstance(r, EncodeResult)]
    # Rows are [n, n, n, n] (DIM 4): group "a" answers 10x the sum, a lone one the sum.
    assert values == [40.0, 8.0, 120.0, 16.0, 200.0]
    assert sorted(calls) == [("alone", 1), ("alone", 1), ("together", 3)]
    assert all(isinstance(r, EncodeResult) and r.follow_up_s > 0 for r in results)


def test_a_failing_group_fails_its_own_requests_only() -> None:
    calls: list[tuple[str, int]] = []
    follow_ups = [Summed("a", calls, fail=True), Summed("a", calls), Summed("b", calls)]
    first, second, other = _grouped_batch(follow_ups)
    assert isinstance(first, RuntimeError)
    assert isinstance(second, RuntimeError)
    assert isinstance(other, EncodeResult)
    assert other.follow_up == 12.0


# -- rows without a finite vector -------------------------------------------------------------


def test_an_input_without_a_finite_vector_fails_only_its_own_request() -> None:
    encoder = FakeTextEncoder(nan_texts=frozenset({"broken"}))
    gate, entered = threading.Event(), threading.Event()

    def gated(texts: Sequence[str]) -> np.ndarray:
        entered.set()
        assert gate.wait(timeout=10), "the test never opened the gate"
        return encoder.encode_texts(texts)

    metrics = ServiceMetrics()
    batcher: Batcher[str] = Batcher(gated, limits(), metrics, variant="v", tower="text")

    async def scenario() -> list[EncodeResult | BaseException]:
        first = asyncio.create_task(batcher.submit(["first"], math.inf))
        await wait_until(entered.is_set)
        tasks = [
            asyncio.create_task(batcher.submit(group, math.inf))
            for group in (["fine"], ["fine", "broken"], ["also fine"])
        ]
        await wait_until(lambda: batcher.queue_depth == 3)
        gate.set()
        return list(await asyncio.gather(first, *tasks, return_exceptions=True))

    _, good, bad, other = asyncio.run(scenario())
    assert isinstance(bad, InvalidQueryError)
    assert bad.message == "text #1 cannot be embedded: variant 'v' gives no finite vector"
    assert code_of(bad) is ErrorCode.INVALID_INPUT
    assert isinstance(good, EncodeResult)
    assert isinstance(other, EncodeResult)
    assert good.rows.shape == other.rows.shape == (1, FAKE_DIM)
    # One shared call; the bad rows failed their request without a retry.
    assert encoder.calls == [["first"], ["fine", "fine", "broken", "also fine"]]


def test_a_follow_up_never_sees_rows_without_a_finite_vector() -> None:
    encoder = FakeTextEncoder(nan_texts=frozenset({"broken"}))
    metrics = ServiceMetrics()
    batcher: Batcher[str] = Batcher(
        encoder.encode_texts, limits(), metrics, variant="fake", tower="text"
    )
    followed: list[np.ndarray] = []
    with pytest.raises(InvalidQueryError, match="text #0 cannot be embedded") as refused:
        asyncio.run(batcher.submit(["broken"], math.inf, followed.append))
    assert followed == []
    assert STATUS_OF[code_of(refused.value)] == 422


def test_an_image_without_a_finite_vector_is_refused() -> None:
    encoder = FakeImageEncoder(nan_colours=frozenset({"blue"}))
    batcher: Batcher[Image.Image] = Batcher(
        encoder.encode_images, limits(), ServiceMetrics(), variant="pixels", tower="image"
    )
    images = [Image.new("RGB", (4, 4), COLOURS[colour]) for colour in ("red", "blue")]
    with pytest.raises(InvalidQueryError, match="image #1 cannot be embedded") as refused:
        asyncio.run(batcher.submit(images, math.inf))
    assert "variant 'pixels' gives no finite vector" in refused.value.message
    assert code_of(refused.value) is ErrorCode.INVALID_INPUT


def test_a_result_says_when_its_batch_and_its_follow_up_ran() -> None:
    """The readings a traced request's queue, encode and search spans are made of."""
    encoder = GatedEncoder()
    encoder.gate.set()
    batcher, _ = make(encoder)

    async def scenario() -> tuple[float, EncodeResult, float]:
        before = time.perf_counter()
        result = await batcher.submit([5], math.inf, follow_up=lambda rows: int(rows[0, 0]))
        return before, result, time.perf_counter()

    before, result, after = asyncio.run(scenario())
    assert result.follow_up == 5
    assert before <= result.started_s - result.queue_s <= result.started_s
    assert result.started_s + result.encode_s <= result.follow_up_started_s
    assert result.follow_up_started_s + result.follow_up_s <= after
