"""Plain data: jobs, sites, availability profiles. Imports nothing else of metasched."""

from metasched.model.grid import Cluster, Machine
from metasched.model.job import Job
from metasched.model.licence import Licence
from metasched.model.profile import Profile
from metasched.model.qos import JobQos, UserClass
from metasched.model.site import Site

__all__ = ["Cluster", "Job", "JobQos", "Licence", "Machine", "Profile", "Site", "UserClass"]
