"""Workloads: SWF traces, their transforms and seeded generators. Imports only :mod:`metasched.model`."""

from metasched.workload.swf import SwfError, Workload, iter_records, read_swf, write_swf

__all__ = ["SwfError", "Workload", "iter_records", "read_swf", "write_swf"]
