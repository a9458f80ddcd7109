"""Serve the page, the API's Swagger UI and their static files, each with a strict
Content-Security-Policy.

The files are read once from the package, so a request is a dictionary look-up. Only
the files shipped in ``static/`` exist, and ``vocabulary.js``, rendered once from
``tracesets.vocabulary`` so the page's filters, statuses and limits are the service's;
the routes stay out of the OpenAPI description.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Final, cast

import orjson
from fastapi import APIRouter, Request, Response
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

from tracesets import vocabulary

#: No inline script or style anywhere, nothing from another origin, no framing.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

_MEDIA_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}

_SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    # Revalidated on every load (ETag): a new version shows at once, an old one costs a 304.
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True)
class StaticFile:
    body: bytes
    media_type: str
    etag: str


def _static(body: bytes, media_type: str) -> StaticFile:
    return StaticFile(body, media_type, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')


def _load(entries: Iterable[Traversable]) -> dict[str, StaticFile]:
    files: dict[str, StaticFile] = {}
    for entry in entries:
        suffix = entry.name[entry.name.rfind(".") :]
        if entry.is_file() and suffix in _MEDIA_TYPES:
            files[entry.name] = _static(entry.read_bytes(), _MEDIA_TYPES[suffix])
    return files


#: How the page reads each figure's sort: the figure, then which end comes first.
_SORT_WORDS: Final[Mapping[vocabulary.Figure, tuple[str, str, str]]] = {
    "gpu_idle_pct": ("GPU idle %", "low first", "high first"),
    "comm_overlap_pct": ("Comm. overlap %", "low first", "high first"),
    "step_ms": ("Step time", "shortest first", "longest first"),
}


def sort_label(sort: vocabulary.Sort) -> str:
    """A sort as its select option reads, such as "GPU idle %, high first"."""
    if sort == vocabulary.DEFAULT_SORT:
        return "Newest first"
    figure, low, high = _SORT_WORDS[cast("vocabulary.Figure", sort.removeprefix("-"))]
    return f"{figure}, {high if sort.startswith('-') else low}"


def vocabulary_module() -> bytes:
    """An ES module of the vocabulary: ``FILTERS`` (name, kind, label, description,
    maximum, alias), ``SORTS`` (value, label), ``DEFAULT_SORT``, ``STATUSES`` and
    ``LIMITS``, as JSON literals."""
    exports = {
        "FILTERS": [
            {
                "name": f.name,
                "kind": f.kind,
                "label": f.label,
                "description": f.description,
                "maximum": f.maximum,
                "alias": f.alias,
            }
            for f in vocabulary.FILTERS
        ],
        "SORTS": [{"value": s, "label": sort_label(s)} for s in vocabulary.SORTS],
        "DEFAULT_SORT": vocabulary.DEFAULT_SORT,
        "STATUSES": list(vocabulary.STATUSES),
        "LIMITS": {
            "listPageMax": vocabulary.LIST_PAGE_MAX,
            "listPageDefault": vocabulary.LIST_PAGE_DEFAULT,
            "filesPageMax": vocabulary.FILES_PAGE_MAX,
            "filesPerRequest": vocabulary.MAX_FILES_PER_REQUEST,
            "filesPerTraceset": vocabulary.MAX_FILES_PER_TRACESET,
            "maxRankCount": vocabulary.MAX_RANK_COUNT,
            "maxMetadataBytes": vocabulary.MAX_METADATA_BYTES,
        },
    }
    lines = ["// Rendered by the service from tracesets.vocabulary: do not edit."]
    lines += [
        f"export const {name} = {orjson.dumps(value).decode()};" for name, value in exports.items()
    ]
    return ("\n".join(lines) + "\n").encode()


STATIC: Final = _load((resources.files(__package__) / "static").iterdir())
#: Swagger UI for /docs, from its Python distribution: the page works with no internet.
SWAGGER_UI: Final = _load(
    swagger_ui_path / name for name in ("swagger-ui-bundle.js", "swagger-ui.css")
)

#: Rendered, not shipped: served beside ``STATIC`` under /static/.
RENDERED: Final = {"vocabulary.js": _static(vocabulary_module(), _MEDIA_TYPES[".js"])}

router = APIRouter(include_in_schema=False)


def _serve(request: Request, name: str, files: Mapping[str, StaticFile] = STATIC) -> Response:
    found = files.get(name)
    if found is None:
        return Response(b"Not found\n", 404, _SECURITY_HEADERS, media_type="text/plain")
    headers = {**_SECURITY_HEADERS, "ETag": found.etag}
    if request.headers.get("if-none-match") == found.etag:
        return Response(status_code=304, headers=headers)
    return Response(found.body, 200, headers, media_type=found.media_type)


@router.api_route("/", methods=["GET", "HEAD"])
async def index(request: Request) -> Response:
    return _serve(request, "index.html")


@router.api_route("/docs", methods=["GET", "HEAD"])
async def api_docs(request: Request) -> Response:
    return _serve(request, "docs.html")


@router.api_route("/static/swagger-ui/{name}", methods=["GET", "HEAD"])
async def swagger_ui_file(request: Request, name: str) -> Response:
    return _serve(request, name, SWAGGER_UI)


@router.api_route("/static/vocabulary.js", methods=["GET", "HEAD"])
async def vocabulary_file(request: Request) -> Response:
    return _serve(request, "vocabulary.js", RENDERED)


@router.api_route("/static/{name}", methods=["GET", "HEAD"])
async def static_file(request: Request, name: str) -> Response:
    return _serve(request, name)
