"""The web page at ``/``: static files, no build step, served by the service itself."""

from tracesets.web.pages import CONTENT_SECURITY_POLICY, router

__all__ = ["CONTENT_SECURITY_POLICY", "router"]
