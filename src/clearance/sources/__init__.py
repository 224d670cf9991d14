"""Connectors: content and permissions kept in step with source systems (docs/sources.md).

:mod:`~clearance.sources.base` is the contract a connector implements;
:mod:`~clearance.sources.registry` finds a connector by its ``kind``;
:mod:`~clearance.sources.http` holds what every HTTP connector shares.
"""
