"""Suite-wide rules.

``METASCHED_REQUIRE_LIVE=1`` (set by ``scripts/test`` under CI) turns a skipped live test into a
failed run: in CI the real batch systems, PostgreSQL and sshd are started by ``scripts/testbed/up``,
so a live test that skips there means the real thing was not tested, and CI must not pass quietly.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# A hypothesis example's speed depends on the machine's load (2 shared cores under xdist), not on the
# code under test: no per-example deadline and no "too slow" health check, for the whole suite. A test
# may still set its own ``@settings(...)``; those inherit from this profile. ``HYPOTHESIS_PROFILE``
# picks another registered profile (e.g. "dev").
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", parent=settings.get_profile("suite"), max_examples=20)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

# The suite's ``metasched`` subprocesses run in their own process (the command server of
# ``metasched.cli.launch`` would start one per test environment and outlive the test);
# tests/cli/test_cmdserver.py runs the same commands through a server and compares.
os.environ["METASCHED_CMDSERVER"] = "0"

_LIVE_PREFIXES = ("tests/runtime/",)
_live_skips: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and report.nodeid.startswith(_LIVE_PREFIXES):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _live_skips.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("METASCHED_REQUIRE_LIVE") == "1" and _live_skips and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if os.environ.get("METASCHED_REQUIRE_LIVE") == "1" and _live_skips:
        terminalreporter.section("live tests skipped although METASCHED_REQUIRE_LIVE=1", red=True)
        for line in _live_skips:
            terminalreporter.line(line)
