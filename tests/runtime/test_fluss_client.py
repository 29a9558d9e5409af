"""How the store decides that pyfluss acknowledged a write (no server needed).

pyfluss's ``flush`` returns normally once every queued batch is done, a batch that
failed included; only a write's own handle reports the failure. These fakes play a
writer whose batch failed that way."""

from __future__ import annotations

import asyncio

import fluss
import pytest

from replay_contract.runtime.fluss_client import acknowledged


class _Handle:
    def __init__(self, error: str | None) -> None:
        self.error, self.waited = error, False

    async def wait(self) -> None:
        self.waited = True
        if self.error is not None:
            raise fluss.FlussError(self.error)


class _Writer:
    def __init__(self) -> None:
        self.flushed = 0

    async def flush(self) -> None:  # done, whatever became of the batches
        self.flushed += 1


def _run(handles: list[_Handle], *writers: _Writer | None) -> None:
    asyncio.run(acknowledged(handles, *writers))  # type: ignore[arg-type]


def test_a_failed_batch_is_not_acknowledged_although_the_flush_returned() -> None:
    log, index = _Writer(), _Writer()
    handles = [_Handle(None), _Handle("retries used up"), _Handle(None)]
    with pytest.raises(fluss.FlussError, match="retries used up"):
        _run(handles, log, index)
    assert (log.flushed, index.flushed) == (1, 1)  # everything queued was sent first
    assert [h.waited for h in handles[:2]] == [True, True]


def test_writes_whose_handles_all_succeed_are_acknowledged() -> None:
    log = _Writer()
    handles = [_Handle(None), _Handle(None)]
    _run(handles, log, None)  # a writer with nothing queued is left alone
    assert log.flushed == 1 and all(h.waited for h in handles)
