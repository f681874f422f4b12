"""Griffe extension: read the package's docstrings as their authors meant them.

Two habits of the docstrings come out as raw markup on the reference pages:

- the doctests are headed ``Example:``. Griffe's Google-style parser knows only
  ``Examples:`` and makes anything else an admonition of plain Markdown, in
  which the ``>>>`` prompts become nested block quotes and the code runs
  together into one paragraph;
- Sphinx roles (``:class:`KStreamLikeError```, ``:meth:`~kstreamlike.X.f```)
  are not Markdown: the page shows ``:class:`` before the name.

Before a docstring is parsed, the heading is renamed and every role becomes the
inline code Sphinx would show (``~`` keeps the last name of the path).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

EXAMPLE_HEADING = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)
ROLE = re.compile(
    r":(?:py:)?(?:class|meth|func|attr|mod|exc|data|obj|const):`(~?)\.?([^`]+)`"
)


def _role(match: re.Match[str]) -> str:
    target = match[2]
    return f"`{target.rsplit('.', 1)[-1] if match[1] else target}`"


def rewrite(docstring: str) -> str:
    """The docstring with ``Examples:`` headings and roles as inline code."""
    return ROLE.sub(_role, EXAMPLE_HEADING.sub(r"\1Examples:", docstring))


class DocstringFixes(griffe.Extension):
    """Apply ``rewrite`` to the docstring of every object."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
