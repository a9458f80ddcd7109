"""The use cases: what the service does with tracesets, tokens, transfers and inspections.

The only layer besides the application factory that touches the database; it knows
nothing of HTTP, so a worker or a script can run it without a web framework.
"""
