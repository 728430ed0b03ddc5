"""What a query is: the I/O-free spec, its ranking options and the immutable builder.

Imports ``filters`` and below.
"""
