"""MkDocs hook: let code in table cells wrap where a reader expects it to.

The theme wraps inline code anywhere when a table column is narrow, which splits
identifiers (``ContinuousEventTimeTrig`` / ``ger.of(interval)``). A ``<wbr>``
before each ``.name`` and after each ``(``, and in a long name after each ``_``
and between the words of CamelCase, gives the browser better places to wrap;
the text of the page (and what a copy takes) is unchanged.
"""

from __future__ import annotations

import re
from typing import Any

CELL = re.compile(r"(<td\b[^>]*>)(.*?)(</td>)", re.DOTALL)
INLINE_CODE = re.compile(r"(<code>)([^<]*)(</code>)")
# before .name, and after ( unless the call is empty
CALL = re.compile(r"(?<=\w)(?=\.[A-Za-z_])|(?<=\()(?=[^)])")
LONG_NAME = re.compile(r"\w{16,}")
# after _ in snake_case, and between the words of CamelCase
WORD = re.compile(r"(?<=[a-z0-9]_)(?=[a-z])|(?<=[a-z])(?=[A-Z])")


def _name(match: re.Match[str]) -> str:
    return WORD.sub("\0", match[0])


def _code(match: re.Match[str]) -> str:
    text = CALL.sub("\0", LONG_NAME.sub(_name, match[2]))
    return match[1] + text.replace("\0", "<wbr>") + match[3]


def _cell(match: re.Match[str]) -> str:
    return match[1] + INLINE_CODE.sub(_code, match[2]) + match[3]


def on_page_content(html: str, **kwargs: Any) -> str:
    """Add the wrapping points to the code of every table cell of a page."""
    return CELL.sub(_cell, html)
