"""metasched: a metascheduler for batch jobs across heterogeneous sites.

One scheduling-policy core (:mod:`metasched.policy`, pure, no I/O) driven by two drivers:
the trace simulator (:mod:`metasched.sim`) and the live metaqueue (:mod:`metasched.runtime`).
"""

__version__ = "0.1.0"
