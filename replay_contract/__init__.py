"""replay-contract: the replay contract for keyed agent recovery.

Subpackages: :mod:`replay_contract.model` (the reference model),
:mod:`replay_contract.spec` (the properties and their Z3 encoding) and
:mod:`replay_contract.conformance` (the conformance suite).
"""

__version__ = "0.1.0"
