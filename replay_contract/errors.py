"""The errors of the package, in one place.

Every error a user sees as one line derives from :class:`CommandError`: the command line
prints it (``replay-contract COMMAND: error: ...``) and exits with status 2. The model's
own refusals (:class:`~replay_contract.model.errors.ScenarioError`,
:class:`~replay_contract.model.errors.UnknownContractError`) stay with the model, which
depends on nothing else of the package. Nothing here imports the command line, so the
runtime, the services and the conformance suite raise these without it.
"""

from __future__ import annotations

from replay_contract.exits import InfrastructureError


class CommandError(Exception):
    """Input a command refuses, or a failure it reports; the message is one line."""


class StoreError(CommandError):
    """The action state store failed; the message is one line."""


class TargetUnavailable(Exception):
    """Raised by an implementation that cannot go on for a reason outside the contract:
    its server went away, its process exited or stopped answering. The scenario's
    verdict is then ``error``, not ``failed``: the outage says nothing about the
    contract. The message names the cause (the broker at 127.0.0.1:PORT went away, the
    target exited with status N, was killed by signal S).

    An implementation may also have an optional ``health()`` method returning ``None``
    when what it depends on is there, else the cause as one line; the suite asks it
    after a scenario fails (a failure while the broker is gone is an error) and before
    a scenario that follows an error (so an outage costs no further waiting)."""


class StoreUnavailable(StoreError, TargetUnavailable):
    """The store's server did not answer within the store's bound (retries included):
    an infrastructure error, so a conformance scenario it cuts short is an ``error``."""


class RecordError(StoreError):
    """A stored record that cannot be decoded; the message names where it is."""


class ServiceError(CommandError):
    """A service that cannot be started, checked or stopped; the message is one line."""


class StartError(ServiceError, InfrastructureError):
    """A server that was launched but died or did not answer during start-up: not bad
    input but an infrastructure error (exit status 3, replay_contract.exits)."""
