"""The upstream channels as the suite drives them.

The suite, not the implementation under test, owns the channels: which record each
channel delivers next, the offsets a checkpoint saves and a restore rewinds to, and the
high water of every channel (the first offset never delivered). Re-delivery follows the
reference model exactly: a replayable channel delivers the same records again; one that
is not replayable skips the records it lost and delivers changed ones with their new
payload, for every offset below its high water.
"""

from __future__ import annotations

from replay_contract.model.errors import ScenarioError
from replay_contract.model.topology import Record, Topology


class Channels:
    """Offsets, checkpointed offsets and high water of every channel of a topology."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.offsets: dict[str, int] = {}
        self.saved: dict[str, int] = {}
        self.high_water: dict[str, int] = {}

    def next_record(self, channel: str) -> Record | None:
        """The record ``channel`` delivers next (as stored, before any change)."""
        offset = self.offsets.get(channel, 0)
        high = self.high_water.get(channel, 0)
        for record in self.topology.channel(channel).records[offset:]:
            if record.offset < high and record.replay is not None and record.replay.lost:
                continue
            return record
        return None

    def pending(self) -> list[str]:
        """Channels that still have a record to deliver, in topology order."""
        return [c.name for c in self.topology.channels if self.next_record(c.name) is not None]

    def deliver(self, identity: str) -> Record:
        """Deliver record ``identity``: the record as its channel delivers it now."""
        try:
            record = self.topology.record(identity)
        except KeyError:
            raise ScenarioError(f"deliver {identity!r}: no such record") from None
        expected = self.next_record(record.channel)
        if expected is None or expected.identity != identity:
            nxt = "nothing" if expected is None else repr(expected.identity)
            raise ScenarioError(
                f"deliver {identity!r}: channel {record.channel!r} delivers {nxt} next"
            )
        channel = self.topology.channel(record.channel)
        again = record.offset < self.high_water.get(record.channel, 0)
        self.offsets[record.channel] = record.offset + 1
        self.high_water[record.channel] = max(
            self.high_water.get(record.channel, 0), record.offset + 1
        )
        return record.replayed() if again and not channel.replayable else record

    def checkpoint(self) -> None:
        self.saved = dict(self.offsets)

    def restore(self) -> None:
        self.offsets = dict(self.saved)
