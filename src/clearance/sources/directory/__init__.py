"""Directory sources: users and groups pulled from an identity provider (see :mod:`.base`)."""
