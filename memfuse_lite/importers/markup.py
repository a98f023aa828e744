"""HTML written where text is expected (mail bodies, calendar descriptions), read as text."""

from __future__ import annotations

import re
from html.parser import HTMLParser

HTML_TAG = re.compile(r"<(?:[a-zA-Z][a-zA-Z0-9]*\b[^>]*|/[a-zA-Z][a-zA-Z0-9]*\s*)>")
"""An opening or closing tag (not a bare "<" or "a < b > c")."""


class _Text(HTMLParser):
    """HTML reduced to its text (scripts and styles dropped)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("br", "p", "div", "li", "tr"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """The readable text of an HTML body."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return "\n".join(" ".join(line.split()) for line in "".join(parser.parts).splitlines()
                     if line.strip())


def plain(text: str) -> str:
    """``text`` with any HTML in it read as text (text without tags unchanged)."""
    return html_to_text(text) if HTML_TAG.search(text) else text
