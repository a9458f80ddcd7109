"""Tracesets: keep the traces of distributed ML training runs as tracesets."""

__version__ = "0.1.0"
