"""The errors of the package, in one place.

Every error a user sees as one line derives from :class:`CommandError`: the command line
prints it (``replay-contract COMMAND: error: ...``) and exits with status 2. The model's
own refusals (:class:`~replay_contract.model.errors.ScenarioError`,
:class:`~replay_contract.model.errors.UnknownContractError`) stay with the model, which
depends on nothing else of the package. Nothing here imports the command line, so the
runtime, the services and the conformance suite raise these without it.
"""

from __future__ import annotations


class CommandError(Exception):
    """Input a command refuses, or a failure it reports; the message is one line."""


class StoreError(CommandError):
    """The action state store failed; the message is one line."""


class StoreUnavailable(StoreError):
    """The store's server did not answer within the store's bound (retries included)."""


class RecordError(StoreError):
    """A stored record that cannot be decoded; the message names where it is."""


class ServiceError(CommandError):
    """A service that cannot be started, checked or stopped; the message is one line."""
