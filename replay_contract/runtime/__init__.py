"""Runtimes of the keyed agent operator over real action state stores (Kafka, Fluss)."""
