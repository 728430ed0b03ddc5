"""What a query is: the I/O-free spec, its ranking options and the immutable builder (imports ``filters`` and below)."""
