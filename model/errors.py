"""Errors the model raises for input it refuses."""


class ScenarioError(ValueError):
    """A scenario, or a step of it, that the model refuses.

    The message is one line that names the place (a JSON path or a schedule step).
    """


class UnknownContractError(ValueError):
    """A contract name that is not one of the known variants."""
