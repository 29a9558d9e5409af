"""The contract live: a scenario run as a real Apache Flink job (``replay-contract live``).

:mod:`.plan` turns a scenario into what the job and its driver do in each attempt (pure,
no Flink); :mod:`.job` holds the functions that run inside Flink's Python worker (the
gate that forces each attempt's interleaving, and the agent operator: a host of the
contract's rules over Flink keyed state and the real store); :mod:`.driver` starts the
job on a local MiniCluster, feeds the channels, triggers checkpoints and injects the
failures, and writes the run down as a trace the conformance checker judges.
"""
