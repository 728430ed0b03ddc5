"""encoders."""
