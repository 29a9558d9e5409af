"""The reference model of the replay contract.

Small, pure and deterministic: every value is a frozen attrs class and every step of a
run is a function from one world to the next. The modules follow the sections of the
published contract:

- :mod:`.topology`: records, channels and keys;
- :mod:`.agent`: actions, memory, tools and the causal identity of a completion;
- :mod:`.store`: the action state store as a log of durable entries;
- :mod:`.contracts`: the contract variants, as values;
- :mod:`.operator`: the keyed operator and the schedule vocabulary
  (``deliver``, ``checkpoint``, ``crash``, ``restore``, ``end``);
- :mod:`.trace`: the observable trace a run leaves;
- :mod:`.log`: the append-only sequence a run's successive worlds share;
- :mod:`.scenario`: the JSON scenario format and the built-in catalogue;
- :mod:`.run`: running a scenario under a contract;
- :mod:`.explore`: the exhaustive explorer.
"""
