"""Experiment sweeps reproducing the papers' figures."""
