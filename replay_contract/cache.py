"""The download cache: what the project fetches or builds once, kept outside any clone.

One folder for all of it, so that a fresh clone (CI's, a second checkout) finds what an
earlier one downloaded: the services' resolved jars, the Flink Agents build and its runs,
PyFlink, the Mermaid runtime of the site and the proof cache of ``verify``. It is
``$REPLAY_CONTRACT_CACHE``, by default ``~/.cache/replay-contract``; each user of it keeps
a folder of its own inside.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The download cache: ``$REPLAY_CONTRACT_CACHE`` or ``~/.cache/replay-contract``."""
    configured = os.environ.get("REPLAY_CONTRACT_CACHE")
    root = Path(configured) if configured else Path.home() / ".cache" / "replay-contract"
    return root.expanduser().absolute()
