"""``replay-contract services up|down|status kafka|fluss|all``: the real servers on loopback.

Each service is a module named in :data:`replay_contract.services.SERVICES`, imported only
when asked for, with ``up(*, progress)``, ``down()`` and ``status()`` functions that return
an info dict (``service``, ``running``, ``bootstrap``, ``pids``, ``log``). Progress goes to
stderr; stdout gets one line per service, or JSON with ``--json`` (the info dict for one
service, an object keyed by service for ``all``). ``status`` exits 3 when a service does
not run. A service's recorded state (``state.json`` in its state folder) that cannot be
read or is not of the recorded shape is refused with one line naming the file.
"""

from __future__ import annotations

import argparse
import importlib
import json
from typing import Any, Protocol, cast

from replay_contract.cli import CommandError
from replay_contract.services import SERVICES

ACTIONS = ("up", "down", "status")
NOT_RUNNING = 3


class ServiceModule(Protocol):
    def up(self, *, progress: bool = True) -> dict[str, Any]: ...
    def down(self) -> dict[str, Any]: ...
    def status(self) -> dict[str, Any]: ...


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "services",
        help="start, stop or check the Kafka and Fluss servers on 127.0.0.1",
        description="Start, stop or check real servers on 127.0.0.1 from Maven Central jars.",
    )
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("service", choices=[*SERVICES, "all"])
    parser.add_argument("--json", action="store_true", help="print the service info as JSON")
    parser.set_defaults(func=run)


def load(name: str) -> ServiceModule:
    """The module that runs service ``name``."""
    module_name = SERVICES[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise CommandError(f"service {name!r} is not available yet ({module_name})") from exc
        raise
    return cast(ServiceModule, module)


def describe(action: str, info: dict[str, Any]) -> str:
    """One readable line about a service after ``action``."""
    name = info.get("service", "?")
    if info.get("running"):
        pids = ", ".join(str(pid) for pid in info.get("pids", []))
        where = (
            f"running at {info.get('bootstrap')} ({'pid' if ',' not in pids else 'pids'} {pids})"
        )
        return f"{name}: already {where}" if info.get("already_running") else f"{name}: {where}"
    if action == "down" and info.get("stopped"):
        pids = ", ".join(str(pid) for pid in info["stopped"])
        return f"{name}: stopped ({'pid' if ',' not in pids else 'pids'} {pids})"
    return f"{name}: not running"


def run(args: argparse.Namespace) -> int:
    names = list(SERVICES) if args.service == "all" else [args.service]
    modules = {name: load(name) for name in names}
    if args.action == "down":
        modules = dict(reversed(modules.items()))
    results: dict[str, dict[str, Any]] = {}
    for name, module in modules.items():
        try:
            if args.action == "up":
                results[name] = module.up(progress=True)
            elif args.action == "down":
                results[name] = module.down()
            else:
                results[name] = module.status()
        except BrokenPipeError:
            raise
        except OSError as exc:  # a state, cache or log folder that cannot be written
            where = f"{exc.filename}: " if exc.filename is not None else ""
            raise CommandError(
                f"{name}: {args.action} failed: {where}{exc.strerror or exc}"
            ) from None
    if args.json:
        payload = results[args.service] if args.service != "all" else results
        print(json.dumps(payload, indent=2, sort_keys=True))
    else:
        for info in results.values():
            print(describe(args.action, info))
    if args.action == "status" and not all(info["running"] for info in results.values()):
        return NOT_RUNNING
    return 0
