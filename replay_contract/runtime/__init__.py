"""Runtimes of the keyed agent operator over real action state stores (Kafka, Fluss).

- :mod:`.store`: the small protocols a store backend implements
  (:class:`~.store.ActionStateStore`, :class:`~.store.Namespace`, :class:`~.store.Backend`);
- :mod:`.operator`: the operator runtime, parameterised by a contract value, that the
  conformance suite drives (:class:`~.operator.RuntimeOperator`);
- :mod:`.view` and :mod:`.state`: the indexed view of the store from the recovery marker
  on, keyed state and checkpoints;
- :mod:`.memory_store`, :mod:`.kafka_store` (with :mod:`.codec`, the record format) and,
  from its own engineer, ``fluss_store``: the backends;
- :mod:`.kafka`: the ``kafka`` conformance target (``implementation()``);
- :mod:`.backends`: backends by name; :mod:`.bench`: the measurements of
  ``replay-contract bench``.
"""
