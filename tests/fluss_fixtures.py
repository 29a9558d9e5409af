"""Kept for ``-p fluss_fixtures``: the fixture now lives in ``tests/servers.py``."""

from servers import fluss_bootstrap

__all__ = ["fluss_bootstrap"]
