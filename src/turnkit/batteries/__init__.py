"""Optional batteries: each turns an outside system into a turnkit capability."""
