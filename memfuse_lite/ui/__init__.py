"""``memfuse ui``: a memory inspector in the browser. A local web page (bound to 127.0.0.1,
a random token in the URL it prints) where one viewer, fixed when the server starts as for
the MCP server, searches and asks with the cited records' source trail, walks a timeline
of fused memories with their edges, forgets their own records and reads the memory's
state. Every asset is served from the package: the page works with no network. Needs
the ``ui`` extra (Starlette and uvicorn)."""

from .app import build_app, serve

__all__ = ["build_app", "serve"]
