"""Smoke test of a deployment (or of ``make local``): ``python -m smoke --help``."""
