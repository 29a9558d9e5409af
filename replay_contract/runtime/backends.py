"""The registry of store backends, by name: what ``bench --backend NAME`` and the tests use.

A backend module has a function ``backend() -> Backend`` (:class:`~.store.Backend`) that
finds its server and refuses with a one-line :class:`~.store.StoreError` when it cannot
reach it. Registering a name is one line here (or :func:`register` at run time): the
Fluss store plugs in as ``replay_contract.runtime.fluss``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from replay_contract.errors import CommandError

from .store import Backend

#: Backend name to ``module:function`` that builds it, imported only when asked for.
BACKENDS: dict[str, str] = {
    "memory": "replay_contract.runtime.memory_store:backend",
    "kafka": "replay_contract.runtime.kafka:backend",
    "fluss": "replay_contract.runtime.fluss:backend",
}

#: Backend name to the environment variable that names its server's address (the
#: ``ENV`` of its module); a backend the user pointed there is not skipped by ``all``.
ADDRESSES: dict[str, str] = {
    "kafka": "REPLAY_CONTRACT_KAFKA",
    "fluss": "REPLAY_CONTRACT_FLUSS",
}

_registered: dict[str, Callable[[], Backend]] = {}


def register(name: str, factory: Callable[[], Backend]) -> None:
    """Add (or replace) a backend by name."""
    _registered[name] = factory


def names() -> list[str]:
    return list(dict.fromkeys([*BACKENDS, *_registered]))


def configured(name: str) -> str | None:
    """``VARIABLE=address`` when the user set the address of backend ``name``'s server."""
    variable = ADDRESSES.get(name)
    address = os.environ.get(variable, "").strip() if variable is not None else ""
    return f"{variable}={address}" if address else None


def load(name: str) -> Backend:
    """The backend called ``name``; one line when it is unknown or not available."""
    if name in _registered:
        return _registered[name]()
    if name not in BACKENDS:
        raise CommandError(f"unknown backend {name!r} (known: {', '.join(names())})")
    module_name, _, function = BACKENDS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise CommandError(f"backend {name!r} is not available yet ({module_name})") from None
        raise CommandError(f"backend {name!r} is not available: {exc}") from None
    factory: Callable[[], Backend] = getattr(module, function)
    return factory()
