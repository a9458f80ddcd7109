"""The ``tracesets`` command line."""
