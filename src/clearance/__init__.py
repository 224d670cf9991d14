"""Clearance: a permission-aware answer engine."""

__version__ = "0.1.0"
