"""The placeholder agent: what a placeholder runs inside a site's batch system."""

from metasched.runtime.placeholder.agent import Agent

__all__ = ["Agent"]
