"""Encoders: the protocol and each encoder (imports only ``_errors``/``_matches`` and the core)."""
