"""Helpers shared by the modules of minipkg; not part of its API."""


def to_native(value, encoding="ascii"):
    """Turn bytes into str; leave str as it is."""
    return value.decode(encoding) if isinstance(value, bytes) else value


def user_agent():
    return "minipkg"
