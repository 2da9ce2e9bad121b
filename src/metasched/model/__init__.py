"""Plain data: jobs, sites, availability profiles. Imports nothing else of metasched."""

from metasched.model.job import Job
from metasched.model.profile import Profile
from metasched.model.site import Site

__all__ = ["Job", "Profile", "Site"]
