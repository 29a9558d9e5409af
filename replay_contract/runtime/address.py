"""Where a backend's server is: an environment variable, or the running service."""

from __future__ import annotations

import importlib
import os

from .store import StoreUnavailable


def server_address(
    service: str, env: str, unavailable: type[StoreUnavailable], what: str = "server"
) -> str:
    """The address in ``env``, else the bootstrap address of the running ``service``
    (``replay-contract services up SERVICE``); ``unavailable`` when there is neither."""
    address = os.environ.get(env, "").strip()
    if address:
        return address
    info = importlib.import_module(f"replay_contract.services.{service}").status()
    if not info.get("running") or not info.get("bootstrap"):
        raise unavailable(
            f"{service}: no {what} is running; start one with "
            f"`replay-contract services up {service}` or set {env}"
        )
    return str(info["bootstrap"])
