"""The service's log lines: uvicorn's and its own, as text or one JSON object a line.

``TRACESETS_LOG_FORMAT=json`` writes every line as a JSON object (time, level, logger,
message, and the fields a line carries: a request's id, route, status, duration and
bytes, a background event's name and subject), one a line, for a log collector to read
without patterns. Either way, no line carries a request's query: a signed URL's query
is its signature, and uvicorn's access line printed it.
"""

from __future__ import annotations

import copy
import logging
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Final

import orjson

#: The fields of the line being written, set by whoever knows them (the request's
#: observer); a ``fields`` extra of the record adds to them.
FIELDS: ContextVar[dict[str, Any] | None] = ContextVar("tracesets_log_fields", default=None)

#: What a ``LogRecord`` holds of its own: everything else on it came as ``extra``.
_OWN: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",  # uvicorn's coloured copy of the message
}


class JsonLines(logging.Formatter):
    """A record as one JSON object: time, level, logger, message, its fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        context = FIELDS.get()
        if context:
            line.update(context)
        line.update({k: v for k, v in vars(record).items() if k not in _OWN})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class DropQuery(logging.Filter):
    """uvicorn's access line without the request's query (a signed URL's signature)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (*args[:2], args[2].split("?", 1)[0], *args[3:])
        return True


def config(log_format: str) -> dict[str, Any]:
    """uvicorn's logging, with the service's own loggers, in ``log_format``.

    As text, the access lines are formatted by logging's plain formatter: uvicorn's own
    copies every record and colours it, 5 % of upload-url's time on the event loop. The
    lines keep their content (client, request line without its query, status code).
    """
    from uvicorn.config import LOGGING_CONFIG

    settings = copy.deepcopy(LOGGING_CONFIG)
    formatters = settings["formatters"]
    formatters["access"] = {"format": "%(levelname)s:     %(message)s"}
    formatters["service"] = {"format": "%(levelname)s:     %(name)s: %(message)s"}
    if log_format == "json":
        for name in ("default", "access", "service"):
            formatters[name] = {"()": "tracesets.api.logs.JsonLines"}
    settings.setdefault("filters", {})["no_query"] = {"()": "tracesets.api.logs.DropQuery"}
    settings["handlers"]["access"]["filters"] = ["no_query"]
    settings["handlers"]["service"] = {
        "formatter": "service",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    settings["loggers"]["tracesets"] = {
        "handlers": ["service"],
        "level": "INFO",
        "propagate": False,
    }
    return settings
