"""Runtimes of the keyed agent operator over real action state stores (Kafka, Fluss).

- :mod:`.store`: the small protocols a store backend implements
  (:class:`~.store.ActionStateStore`, :class:`~.store.Namespace`, :class:`~.store.Backend`);
- :mod:`.operator`: the operator runtime, parameterised by a contract value, that the
  conformance suite drives (:class:`~.operator.RuntimeOperator`);
- :mod:`.view` and :mod:`.state`: the indexed view of the store from the recovery marker
  on, keyed state and checkpoints;
- :mod:`.memory_store`, :mod:`.kafka_store` and :mod:`.fluss_store` (both with
  :mod:`.codec`, the record format): the stores; :mod:`.fluss_backend` and
  :mod:`.fluss_client`: Fluss databases as namespaces, and the bounded pyfluss client;
- :mod:`.kafka` and :mod:`.fluss`: the ``kafka`` and ``fluss`` conformance targets
  (``implementation()``);
- :mod:`.backends`: backends by name; :mod:`.bench`: the measurements of
  ``replay-contract bench``.
"""
