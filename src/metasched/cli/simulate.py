"""``metasched simulate``: replay a workload through one site's scheduler."""

from __future__ import annotations

from metasched.cli.main import app  # noqa: F401
