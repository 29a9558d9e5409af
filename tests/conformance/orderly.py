#!/usr/bin/env python3
"""A second implementation of the replay contract, written apart from the reference model.

It speaks the conformance suite's line protocol (docs/protocol.md) on stdin/stdout and
uses nothing but the standard library: the suite runs it as ``process:python orderly.py``
to show that the protocol works end to end and that an independent implementation of the
``ordered`` and ``seqnum`` contracts agrees with the model step for step.

Durable state (the action state store log and the last checkpoint) lives in this process
across a simulated crash; the keyed state does not.

``--bug NAME`` builds it with one deliberate mistake of :data:`BUGS`, each one a way an
implementer might misread the contract or the protocol; the suite's own tests require a
default ``conform`` run to fail every one of them.
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

SUPPORTED = {
    "match": {"position"},
    "record_order": {"no", "with-first-completion"},
    "durable_invalidation": {True},
    "invalidation_scope": {"key"},
}


#: The deliberate mistakes ``--bug`` can build in, with the contract each one breaks.
BUGS = {
    "no-wait": ("ordered", "never waits for a recorded predecessor"),
    "no-give-up-bound": ("ordered", "no give_up_after: waits until the end of input"),
    "no-split-order": ("ordered", "a later record of the missing input's channel gives up nothing"),
    "ignore-digest": ("ordered", "a recorded input that comes back changed is re-accepted"),
    "reuse-forgets-writes": ("ordered", "a reused completion's memory writes are not applied"),
    "volatile-invalidation": ("ordered", "an invalidation is reported but not written"),
    "invalidate-every-key": ("ordered", "an invalidation voids the entries of every key"),
    "waiting-not-checkpointed": ("ordered", "a checkpoint leaves out the waiting inputs"),
    "give-up-keeps-suffix": ("ordered", "giving up invalidates nothing"),
    "end-keeps-waiting": ("ordered", "the end of input gives nothing up"),
    "ignores-timeout": ("ordered", "the wait bound passing gives nothing up"),
    "no-invalidate-on-miss": ("seqnum", "a miss does not invalidate the later entries"),
    "reuse-any-position": ("seqnum", "a completion is reused at whatever position"),
    "positions-not-checkpointed": ("seqnum", "a restore starts every key's positions at 0"),
}
BUG = ""


class Crash(Exception):
    """The suite answered a call with ``crashed``: stop the step, lose keyed state."""


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call(message: dict[str, Any]) -> dict[str, Any]:
    send(message)
    reply: dict[str, Any] = json.loads(sys.stdin.readline())
    if reply.get("crashed"):
        raise Crash()
    return reply


def report(event: str, **fields: Any) -> None:
    call({"call": "report", "event": {"event": event, **fields}})


def kid(key: Any) -> tuple[str, Any]:
    return (type(key).__name__, key)


class Operator:
    def open(self, agent: dict[str, Any], contract: dict[str, Any]) -> None:
        for rule, allowed in SUPPORTED.items():
            if contract[rule] not in allowed:
                raise ValueError(f"contract rule {rule}={contract[rule]!r} is not supported")
        self.c = contract
        self.actions = agent["actions"]
        self.log: list[dict[str, Any]] = []
        self.saved: dict[str, Any] = {"number": 0, "keys": {}, "marker": 0}
        self.keys: dict[tuple[str, Any], dict[str, Any]] = {}
        self.marker = 0

    # -- keyed state and the store ----------------------------------------------------
    def ks(self, key: Any) -> dict[str, Any]:
        if kid(key) not in self.keys:
            self.keys[kid(key)] = {
                "key": key,
                "next": 0,
                "memory": {},
                "waiting": [],
                "expected": [],
                "diverge_at": None,
            }
        return self.keys[kid(key)]

    def valid(self) -> list[tuple[int, dict[str, Any]]]:
        entries = list(enumerate(self.log))[self.marker :]
        invs = [(i, e) for i, e in entries if e["type"] == "invalidation"]
        return [
            (i, e)
            for i, e in entries
            if e["type"] != "invalidation" and not any(j > i and voids(inv, e) for j, inv in invs)
        ]

    def write(self, entry: dict[str, Any]) -> int:
        self.log.append(entry)
        return len(self.log) - 1

    def recorded(self, key: Any, start: int) -> list[dict[str, Any]]:
        at = {
            e["position"]: e
            for _, e in self.valid()
            if kid(e["key"]) == kid(key) and (e["type"] == "order" or e.get("order"))
        }
        out = []
        while start in at:
            out.append(at[start])
            start += 1
        return out

    # -- steps -------------------------------------------------------------------------
    def deliver(self, record: dict[str, Any]) -> None:
        key = record["key"]
        ks = self.ks(key)
        if not (self.c["wait"] and recovering(ks)):
            self.accept(record, recorded=False)
            return
        if self.c["split_order"] and BUG != "no-split-order":
            arrived = {w["id"] for w in ks["waiting"]} | {record["id"]}
            for r in ks["expected"]:
                if (
                    r["channel"] == record["channel"]
                    and r["offset"] < record["offset"]
                    and r["identity"] not in arrived
                ):
                    report(
                        "give-up",
                        key=key,
                        position=r["position"],
                        identity=r["identity"],
                        reason="a later record of its channel arrived",
                    )
                    ks["expected"] = [e for e in ks["expected"] if e["position"] < r["position"]]
                    d = ks["diverge_at"]
                    ks["diverge_at"] = r["position"] if d is None else min(d, r["position"])
                    break
        ks["waiting"].append(record)
        self.advance(key)
        if any(w["id"] == record["id"] for w in ks["waiting"]):
            awaiting = ks["expected"][0]["identity"] if ks["expected"] else ""
            report("wait", key=key, identity=record["id"], awaiting=awaiting)
            bound = self.c["give_up_after"] if BUG != "no-give-up-bound" else 2**62
            if len(ks["waiting"]) > bound and ks["expected"]:
                head = ks["expected"][0]
                self.diverge(key, head["position"], head["identity"], "too many waited")
                self.advance(key)

    def advance(self, key: Any) -> None:
        ks = self.ks(key)
        while True:
            if ks["expected"]:
                head = ks["expected"][0]
                match = next((w for w in ks["waiting"] if w["id"] == head["identity"]), None)
                if match is None:
                    return
                if match["digest"] != head["digest"] and BUG != "ignore-digest":
                    self.diverge(key, head["position"], head["identity"], "came back changed")
                    continue
                ks["expected"] = ks["expected"][1:]
                ks["waiting"] = [w for w in ks["waiting"] if w is not match]
                self.accept(match, recorded=True)
            elif ks["diverge_at"] is not None:
                self.diverge(key, ks["diverge_at"], "", "missing")
            else:
                waiting, ks["waiting"] = ks["waiting"], []
                for record in waiting:
                    self.accept(record, recorded=False)
                return

    def diverge(self, key: Any, position: int, missing: str, reason: str) -> None:
        if missing:
            report("give-up", key=key, position=position, identity=missing, reason=reason)
        ks = self.ks(key)
        ks["expected"], ks["diverge_at"] = [], None
        if BUG != "give-up-keeps-suffix":
            self.invalidate(key, ks["next"], None)

    def invalidate(self, key: Any, position: int, keep: list[str] | None) -> None:
        inv = {"type": "invalidation", "key": key, "position": position, "keep": keep}
        if BUG == "invalidate-every-key":
            inv["every"] = True
        voided = [i for i, e in self.valid() if e["type"] == "completion" and voids(inv, e)]
        if BUG != "volatile-invalidation":
            self.write(inv)
        report("invalidate", key=key, position=position, completions=voided)

    def accept(self, record: dict[str, Any], recorded: bool) -> None:
        key, ident, dig = record["key"], record["id"], record["digest"]
        ks = self.ks(key)
        position, memory = ks["next"], dict(ks["memory"])
        ks["next"] += 1
        report("accept", key=key, position=position, identity=ident, digest=dig)
        ordered = recorded or self.c["record_order"] == "no"
        for path, action in self.plan():
            reads = [memory.get(f) for f in action.get("reads", [])]
            found = None
            for i, e in self.valid():
                if (
                    e["type"] == "completion"
                    and kid(e["key"]) == kid(key)
                    and e["path"] == path
                    and e["identity"] == ident
                    and e["digest"] == dig
                    and (e["position"] == position or BUG == "reuse-any-position")
                ):
                    found = (i, e)
            if found is not None:
                report(
                    "reuse",
                    key=key,
                    position=position,
                    identity=ident,
                    digest=dig,
                    path=path,
                    completion=found[0],
                    reads=reads,
                )
                writes, outputs = found[1]["writes"], found[1]["outputs"]
                if BUG == "reuse-forgets-writes":
                    writes = []
            else:
                if self.c["on_miss"] == "invalidate" and BUG != "no-invalidate-on-miss":
                    inv = {"key": key, "position": position, "keep": [ident, dig]}
                    if any(e["type"] == "completion" and voids(inv, e) for _, e in self.valid()):
                        self.invalidate(key, position, [ident, dig])
                results = [
                    [
                        tool,
                        call(
                            {
                                "call": "tool",
                                "key": key,
                                "position": position,
                                "record": record,
                                "path": path,
                                "tool": tool,
                                "reads": reads,
                            }
                        )["result"],
                    ]
                    for tool in action.get("tools", [])
                ]
                done = call(
                    {
                        "call": "execute",
                        "action": action["name"],
                        "record": record,
                        "path": path,
                        "reads": reads,
                        "tool_results": results,
                    }
                )
                writes, outputs = done["writes"], done["outputs"]
                carries = self.c["record_order"] == "with-first-completion" and not ordered
                index = self.write(
                    {
                        "type": "completion",
                        "key": key,
                        "position": position,
                        "identity": ident,
                        "digest": dig,
                        "path": path,
                        "writes": writes,
                        "outputs": outputs,
                        "order": carries,
                        "channel": record["channel"],
                        "offset": record["offset"],
                    }
                )
                report(
                    "save",
                    key=key,
                    position=position,
                    identity=ident,
                    digest=dig,
                    path=path,
                    completion=index,
                    reads=reads,
                    order=carries,
                )
                ordered = ordered or carries
            memory.update(dict(writes))
            for value in outputs:
                call(
                    {"call": "output", "key": key, "identity": ident, "path": path, "value": value}
                )
        if not ordered:
            self.write(
                {
                    "type": "order",
                    "key": key,
                    "position": position,
                    "identity": ident,
                    "digest": dig,
                    "channel": record["channel"],
                    "offset": record["offset"],
                }
            )
            report("order", key=key, position=position, identity=ident, digest=dig)
        ks["memory"] = memory

    def plan(self) -> list[tuple[list[str], dict[str, Any]]]:
        queue = [([a["name"]], a) for a in self.actions if a.get("trigger", "input") == "input"]
        out = []
        while queue:
            path, action = queue.pop(0)
            out.append((path, action))
            for event in action.get("emits", []):
                queue.extend(
                    ([*path, event, b["name"]], b)
                    for b in self.actions
                    if b.get("trigger", "input") == event
                )
        return out

    def checkpoint(self) -> int:
        needed = [i for i, e in self.valid() if e["position"] >= self.ks(e["key"])["next"]]
        self.marker = min(needed, default=len(self.log))
        keys = copy.deepcopy(self.keys)
        if BUG == "waiting-not-checkpointed":
            for ks in keys.values():
                ks["waiting"] = []
        self.saved = {"number": self.saved["number"] + 1, "keys": keys, "marker": self.marker}
        return int(self.saved["number"])

    def crash(self) -> None:
        self.keys = {}

    def restore(self) -> None:
        self.keys = copy.deepcopy(self.saved["keys"])
        if BUG == "positions-not-checkpointed":
            for ks in self.keys.values():
                ks["next"] = 0
        self.marker = self.saved["marker"]
        if not self.c["wait"]:
            return
        keys = {kid(e["key"]): e["key"] for _, e in enumerate(self.log[self.marker :])}
        for ks in list(self.keys.values()):
            for r in ks["waiting"]:
                keys.setdefault(kid(r["key"]), r["key"])
        for key in keys.values():
            ks = self.ks(key)
            ks["expected"], ks["diverge_at"] = self.recorded(key, ks["next"]), None
        for key in keys.values():
            self.advance(key)

    def timeout(self) -> None:
        for ks in list(self.keys.values()):
            if (
                ks["waiting"]
                and ks["expected"]
                and self.c.get("give_up_on_timeout", True)
                and BUG != "ignores-timeout"
            ):
                head = ks["expected"][0]
                self.diverge(ks["key"], head["position"], head["identity"], "wait bound")
                self.advance(ks["key"])

    def end(self) -> list[dict[str, Any]]:
        for ks in list(self.keys.values()):
            if ks["expected"] and BUG != "end-keeps-waiting":
                head = ks["expected"][0]
                self.diverge(ks["key"], head["position"], head["identity"], "end of input")
            self.advance(ks["key"])
        return [{"key": ks["key"], "memory": ks["memory"]} for ks in self.keys.values()]


def voids(inv: dict[str, Any], e: dict[str, Any]) -> bool:
    other_key = kid(e["key"]) != kid(inv["key"]) and not inv.get("every")
    if other_key or e["position"] < inv["position"]:
        return False
    if e["position"] > inv["position"] or inv["keep"] is None:
        return True
    return [e["identity"], e["digest"]] != list(inv["keep"])


def recovering(ks: dict[str, Any]) -> bool:
    return bool(ks["expected"] or ks["waiting"] or ks["diverge_at"] is not None)


def main() -> int:
    # ``--bug NAME``: a deliberately broken build (BUGS); the suite must fail it
    global BUG
    BUG = sys.argv[sys.argv.index("--bug") + 1] if "--bug" in sys.argv else ""
    if BUG and BUG not in BUGS:
        sys.exit(f"orderly: no bug {BUG!r} (known: {', '.join(BUGS)})")
    send(
        {
            "protocol": "replay-contract/1",
            "name": "orderly (tests/conformance)",
            "capabilities": {
                "contracts": ["ordered", "seqnum"],
                "crash_points": True,
                "non_replayable": True,
                "rescaling": False,
                "timeout": True,
            },
        }
    )
    op = Operator()
    for line in sys.stdin:
        request = json.loads(line)
        kind = request["op"]
        try:
            done: Any = None
            if kind == "open":
                op.open(request["agent"], request["contract"])
                if BUG == "no-wait":
                    op.c = {**op.c, "wait": False}
            elif kind == "deliver":
                op.deliver(request["record"])
            elif kind == "checkpoint":
                done = {"checkpoint": op.checkpoint()}
            elif kind == "crash":
                op.crash()
            elif kind == "restore":
                op.restore()
            elif kind == "timeout":
                op.timeout()
            elif kind == "end":
                done = {"memory": op.end()}
            elif kind != "close":
                raise ValueError(f"unknown request {kind!r}")
            send({"done": done})
        except Crash:
            op.crash()
            send({"crashed": True})
        except Exception as exc:  # tell the suite, keep serving
            send({"error": f"{type(exc).__name__}: {exc}"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
