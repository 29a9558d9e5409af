"""Fixtures shared by every test: the real servers (see ``tests/servers.py``).

The proof cache of ``verify`` (``replay_contract.spec.proofcache``) is off for every test
and every command a test starts, so that each check a test makes is made anew; the tests
of the cache give it a folder of their own."""

import os

from servers import fluss_bootstrap, kafka_bootstrap

os.environ["REPLAY_CONTRACT_PROOF_CACHE"] = "off"

__all__ = ["fluss_bootstrap", "kafka_bootstrap"]
