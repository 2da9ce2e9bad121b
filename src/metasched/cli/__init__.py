"""Thin command-line layer: parse, wire objects, print."""
