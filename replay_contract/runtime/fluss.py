"""The Fluss-backed implementation: the operator runtime over Fluss tables.

:func:`implementation` is what the conformance suite's ``fluss`` target calls. The cluster
is the one ``replay-contract services up fluss`` started (its address comes from
:func:`replay_contract.services.fluss.status`), or the one named by the environment
variable ``REPLAY_CONTRACT_FLUSS`` (``127.0.0.1:PORT``). Only loopback addresses are
accepted; a cluster that does not answer is refused with one line.
"""

from __future__ import annotations

from .address import server_address
from .fluss_backend import FlussBackend
from .operator import RuntimeOperator
from .store import StoreError, StoreUnavailable

ENV = "REPLAY_CONTRACT_FLUSS"
LOOPBACK = "127.0.0.1"
PROBE_TIMEOUT = 10.0


class FlussUnavailable(StoreUnavailable):
    """No reachable Fluss cluster; the message says how to get one."""


def bootstrap_address() -> str:
    """The bootstrap address of the cluster to use (see the module docstring)."""
    address = server_address("fluss", ENV, FlussUnavailable, "cluster")
    host, _, port = address.rpartition(":")
    if host != LOOPBACK or not port.isdigit():
        raise StoreError(
            f"fluss: refusing bootstrap address {address!r}: only {LOOPBACK}:PORT is allowed"
        )
    return address


def probe(address: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Raise :class:`FlussUnavailable` unless a Fluss coordinator at ``address`` answers
    (a port that is closed is refused before any client connects to it)."""
    from replay_contract.services.common import port_answers

    from .fluss_client import Loop, client_config

    port = int(address.rpartition(":")[2])
    if not port_answers(port):
        raise FlussUnavailable(
            f"fluss at {address} is not reachable (nothing listens); "
            "start it with `replay-contract services up fluss`"
        )
    import fluss

    loop = Loop(f"fluss at {address}")

    async def ask() -> None:
        conn = await fluss.FlussConnection.create(client_config(address))
        try:
            await conn.get_admin().list_databases()
        finally:
            await conn.close()

    try:
        loop.run(ask, timeout, "listing databases")
    except (StoreError, fluss.FlussError) as exc:
        raise FlussUnavailable(
            f"fluss at {address} does not answer ({exc}); start it with "
            "`replay-contract services up fluss`"
        ) from None
    finally:
        loop.close()


def backend(address: str | None = None, *, timeout: float = 30.0) -> FlussBackend:
    """Store databases on the reachable cluster at ``address`` (by default, the one
    :func:`bootstrap_address` finds); the benchmark's ``fluss`` backend."""
    address = address or bootstrap_address()
    probe(address)
    return FlussBackend(address, timeout=timeout)


def implementation() -> RuntimeOperator:
    """The Fluss-backed implementation the conformance suite's ``fluss`` target runs."""
    return RuntimeOperator(backend())
