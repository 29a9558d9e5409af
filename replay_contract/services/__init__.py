"""Real servers the project starts on loopback from Maven Central artifacts.

Each service is a module here with ``up``, ``down`` and ``status`` functions; the
``replay-contract services`` command and the tests use them.
"""

#: Service name to the module that runs it.
SERVICES = {
    "kafka": "replay_contract.services.kafka",
    "fluss": "replay_contract.services.fluss",
}
