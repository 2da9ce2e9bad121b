"""Mappers: tasks onto heterogeneous machines from an ETC matrix."""
