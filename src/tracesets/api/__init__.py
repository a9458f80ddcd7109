"""The HTTP layer: thin routes over ``tracesets.service``."""
