"""The services tests use the shared server fixtures of ``tests/conftest.py``."""

from servers import kafka_bootstrap, run_services, services_json

__all__ = ["kafka_bootstrap", "run_services", "services_json"]
