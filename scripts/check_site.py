"""Check a built documentation site for what ``mkdocs build --strict`` lets through.

Usage: ``python scripts/check_site.py SITE_DIR`` after ``mkdocs build --site-dir SITE_DIR``.

Every HTML page of the site is parsed and these are reported, page by page:

- a snippet directive left in the text (``--8<--``, or the ``--8 < --`` that a Python
  formatter makes of it): the code it should have included is missing;
- an empty code block;
- Markdown link or image syntax left as text outside code (``[text](target)``);
- a block quote in a block quote: doctest prompts (``>>>``) read as Markdown;
- a Sphinx role left as text (``:class:`` before a name), which Markdown does not know;
- an image whose ``src`` is not a file of the site;
- a link to a page or file of the site that does not exist, or to an anchor that the
  page it points to does not have.

The exit status is 1 when anything is reported, 0 otherwise.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

# ``--8<--`` as written, or as ``ruff format`` rewrites it (``--8 < --"file:section"``).
SNIPPET_DIRECTIVE = re.compile(r"-\s*-\s*8\s*<\s*-\s*-")
# ``[text](target)`` or ``![alt](src)`` that Markdown did not turn into a link or image.
RAW_MARKDOWN_LINK = re.compile(r"!?\[[^\]\n]+\]\([^)\s]+\)")
SPHINX_ROLE = re.compile(r"(?<![\w:]):(?:py:)?(?:class|meth|func|attr|mod|exc|data|obj|const):")
SKIPPED_TEXT = {"script", "style", "template"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


@dataclass
class Page:
    """What the checks need from one HTML page."""

    path: PurePosixPath  # relative to the site's root
    text: list[str] = field(default_factory=list)  # prose, outside code
    code_blocks: list[str] = field(default_factory=list)  # text of each <pre>'s <code>
    code_text: list[str] = field(default_factory=list)  # text of every <code>
    images: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    nested_quotes: int = 0


class _PageParser(HTMLParser):
    def __init__(self, page: Page) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.stack: list[str] = []
        self.block: list[str] | None = None  # text of the open <pre><code>, if any
        self.inline: list[str] | None = None  # text of the open inline <code>, if any

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        for name in ("id", "name") if tag == "a" else ("id",):
            if name in values:
                self.page.ids.add(values[name])
        if tag == "img" and "src" in values:
            self.page.images.append(values["src"])
        if tag == "a" and "href" in values:
            self.page.links.append(values["href"])
        if tag in VOID:
            return
        if tag == "blockquote" and "blockquote" in self.stack:
            self.page.nested_quotes += 1
        if tag == "code":
            if "pre" in self.stack and self.block is None:
                self.block = []
            elif self.block is None and self.inline is None:
                self.inline = []
        self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.stack and self.stack[-1] == tag:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.stack:
            return
        while self.stack:
            open_tag = self.stack.pop()
            if open_tag == "code" and "code" not in self.stack:
                if self.block is not None:
                    self.page.code_blocks.append("".join(self.block))
                    self.page.code_text.append("".join(self.block))
                    self.block = None
                elif self.inline is not None:
                    self.page.code_text.append("".join(self.inline))
                    self.inline = None
            if open_tag == tag:
                break

    def handle_data(self, data: str) -> None:
        if SKIPPED_TEXT.intersection(self.stack):
            return
        if self.block is not None:
            self.block.append(data)
        elif self.inline is not None:
            self.inline.append(data)
        elif "pre" not in self.stack:
            self.page.text.append(data)


def parse(path: PurePosixPath, html: str) -> Page:
    """The text, code, images, links and anchors of one page."""
    page = Page(path)
    parser = _PageParser(page)
    parser.feed(html)
    parser.close()
    return page


def _target(page: PurePosixPath, url: str) -> tuple[PurePosixPath, str] | None:
    """The site path and fragment a URL of ``page`` points to, or None for another site."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        return None
    if not parts.path:
        return page, unquote(parts.fragment)
    if parts.path.startswith("/"):
        joined = PurePosixPath(unquote(parts.path).lstrip("/"))
    else:
        joined = page.parent / unquote(parts.path)
    resolved: list[str] = []
    for part in joined.parts:
        if part == "..":
            if not resolved:
                return PurePosixPath(".."), ""  # outside the site
            resolved.pop()
        elif part != ".":
            resolved.append(part)
    path = PurePosixPath(*resolved) if resolved else PurePosixPath(".")
    if parts.path.endswith("/"):
        path = path / "index.html"
    return path, unquote(parts.fragment)


def problems(pages: dict[PurePosixPath, Page], files: set[PurePosixPath]) -> Iterator[str]:
    """Every problem of every page, as ``page: what``."""
    for path, page in sorted(pages.items()):
        prose = "".join(page.text)
        for text in (prose, *page.code_text):
            for line in text.splitlines():
                if SNIPPET_DIRECTIVE.search(line):
                    yield f"{path}: snippet directive not included: {line.strip()!r}"
        for index, block in enumerate(page.code_blocks, start=1):
            if not block.strip():
                yield f"{path}: code block {index} is empty"
        for match in RAW_MARKDOWN_LINK.finditer(prose):
            yield f"{path}: Markdown left as text: {match.group()!r}"
        for match in SPHINX_ROLE.finditer(prose):
            yield f"{path}: Sphinx role left as text: {match.group()!r}"
        if page.nested_quotes:
            yield (
                f"{path}: a block quote in a block quote ({page.nested_quotes} times): "
                "doctest prompts read as Markdown?"
            )
        for src in page.images:
            target = _target(path, src)
            if target is not None and target[0] not in files:
                yield f"{path}: image not found: {src}"
        for href in page.links:
            target = _target(path, href)
            if target is None:
                continue
            file, fragment = target
            if file not in files and file / "index.html" in files:
                file = file / "index.html"
            if file not in files:
                yield f"{path}: link to a missing file: {href}"
            elif fragment and file in pages and fragment not in pages[file].ids:
                yield f"{path}: link to a missing anchor: {href}"


def check(site: Path) -> list[str]:
    """The problems of the site built in ``site``."""
    files = {PurePosixPath(p.relative_to(site).as_posix()) for p in site.rglob("*") if p.is_file()}
    pages = {
        path: parse(path, (site / path).read_text(encoding="utf-8"))
        for path in files
        if path.suffix == ".html"
    }
    return list(problems(pages, files))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    site = Path(argv[0])
    found = check(site)
    for problem in found:
        print(problem)
    pages = sum(1 for _ in site.rglob("*.html"))
    if found:
        print(f"{len(found)} problems in the built site ({pages} pages)", file=sys.stderr)
        return 1
    print(f"site check: {pages} pages, no problems")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
