"""Fixtures shared by every test: the real servers (see ``tests/servers.py``)."""

from servers import fluss_bootstrap, kafka_bootstrap

__all__ = ["fluss_bootstrap", "kafka_bootstrap"]
