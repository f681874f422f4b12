"""The documentation: snippet includes that a formatter cannot break, and the checks of the
built site (``scripts/check_site.py``, ``scripts/check_site_browser.py``).

The tests marked ``site`` build the site (a few seconds of MkDocs, half a minute of
Chromium): they run only when asked for, with ``pytest -m site``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# A pymdownx.snippets include of a section, the only form the docs use.
INCLUDE = re.compile(r'--8<-- "(?P<file>[^":]+):(?P<section>[\w-]+)"')


def _script(name: str, folder: str = "scripts") -> ModuleType:
    """A module of ``scripts/`` (or of another folder that is not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


check_site = _script("check_site")


def _includes() -> list[tuple[Path, int, str]]:
    """Every line of the docs' Markdown that looks like a snippet directive, even mangled."""
    return [
        (page, number, line)
        for page in sorted(DOCS.rglob("*.md"))
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        if check_site.SNIPPET_DIRECTIVE.search(line)
    ]


def test_the_concept_pages_include_the_code_of_their_diagrams() -> None:
    includes = _includes()
    concepts = (
        "index",
        "event-time",
        "time",
        "windows",
        "lateness",
        "emission",
        "side-outputs",
        "joins",
    )
    assert {page.relative_to(DOCS).as_posix() for page, _, _ in includes} >= {
        f"concepts/{name}.md" for name in concepts
    }
    for page, number, line in includes:
        where = f"{page.relative_to(ROOT)}:{number}"
        match = INCLUDE.fullmatch(line)
        assert match, f"{where}: not a snippet include: {line!r}"
        source = ROOT / match["file"]
        assert source.is_file(), f"{where}: no file {match['file']}"
        text = source.read_text()
        for marker in ("start", "end"):
            assert f"--8<-- [{marker}:{match['section']}]" in text, (
                f"{where}: {match['file']} has no {marker} marker of {match['section']!r}"
            )


def test_the_formatter_leaves_the_snippet_includes_alone() -> None:
    """``ruff format`` formats Python code blocks in Markdown and would rewrite an include
    as an expression (``--8 < --"file:section"``): includes sit between
    ``<!-- fmt: off -->`` and ``<!-- fmt: on -->``."""
    ruff = pytest.importorskip("ruff.__main__").find_ruff_bin()
    pages = sorted({page for page, _, _ in _includes()})
    assert pages
    for page in pages:
        source = page.read_text()
        formatted = subprocess.run(
            [ruff, "format", "--stdin-filename", str(page.relative_to(ROOT)), "-"],
            input=source,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout
        before = [line for line in source.splitlines() if INCLUDE.fullmatch(line)]
        after = [line for line in formatted.splitlines() if INCLUDE.fullmatch(line)]
        assert after == before, f"ruff format rewrites the includes of {page.relative_to(ROOT)}"


def test_code_in_table_cells_wraps_between_names_not_inside_them() -> None:
    table_code = _script("table_code", "docs/hooks")
    html = """<p><code>ks.CountTrigger.of(n)</code></p><table><tr>
    <td><code>ks.ContinuousEventTimeTrigger.of(interval)</code> or <code>g()</code></td>
    <td><code>group_by</code>, <code>for_bounded_out_of_orderness(d)</code></td></tr></table>"""
    out = table_code.on_page_content(html)
    assert out.replace("<wbr>", "") == html
    assert "<p><code>ks.CountTrigger.of(n)</code></p>" in out  # outside tables: as it was
    assert "<code>ks<wbr>.Continuous<wbr>Event<wbr>Time<wbr>Trigger<wbr>.of(<wbr>interval)" in out
    assert "<code>g()</code>" in out and "<code>group_by</code>" in out  # short: unchanged
    assert "<code>for_<wbr>bounded_<wbr>out_<wbr>of_<wbr>orderness(<wbr>d)</code>" in out


def test_docstrings_lose_their_sphinx_roles_and_keep_their_examples() -> None:
    griffe_docstrings = _script("griffe_docstrings", "docs/hooks")
    docstring = """Derive from :class:`KStreamLikeError`; see :meth:`~ks.A.trigger`.

    Example:
        >>> import kstreamlike as ks
    """
    assert griffe_docstrings.rewrite(docstring) == docstring.replace(
        ":class:`KStreamLikeError`", "`KStreamLikeError`"
    ).replace(":meth:`~ks.A.trigger`", "`trigger`").replace("Example:", "Examples:")


PAGE = """<!doctype html><html><head><script>var s = "--8<--";</script></head><body>
<h2 id="top">Top</h2>
{body}
</body></html>"""


def _site(tmp_path: Path, **pages: str) -> Path:
    """A site of ``name.html`` pages (``__`` in a name is a folder) and one image."""
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.png").write_bytes(b"\x89PNG")
    for name, body in pages.items():
        path = tmp_path / f"{name.replace('__', '/')}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PAGE.format(body=body))
    return tmp_path


def test_the_site_check_passes_a_sound_page(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        index="""<p>See <a href="guide/">the guide</a>, <a href="#top">the top</a> and
        <a href="https://example.org/x">elsewhere</a>; <code>f(x)[0]</code>.</p>
        <div class="highlight"><pre><span></span><code><span>x</span> = 1
        </code></pre></div><img src="img/a.png" alt="a"><img src="data:image/png;base64,AA">""",
        guide__index="""<p><a href="../index.html#top">back</a>
        <img src="../img/a.png"></p><!-- fmt: off -->""",
    )
    assert check_site.check(site) == []


def test_the_site_check_reports_what_strict_builds_let_through(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        index="""<pre><span></span><code><span class="o">--</span><span class="mi">8</span> \
<span class="o">&lt;</span> <span class="o">--</span><span>"docs/x.py:a"</span>
        </code></pre>
        <p>--8&lt;-- "docs/y.py:b"</p>
        <pre><code>
        </code></pre>
        <p>A [link](other.md) and ![a picture](a.png) left as text.</p>
        <img src="img/b.png"><a href="nowhere/">x</a><a href="#bottom">y</a>
        <blockquote><blockquote><p>import kstreamlike as ks</p></blockquote></blockquote>
        <p>Derive from :class:<code>KStreamLikeError</code>.</p>""",
    )
    assert check_site.check(site) == [
        "index.html: snippet directive not included: '--8<-- \"docs/y.py:b\"'",
        "index.html: snippet directive not included: '--8 < --\"docs/x.py:a\"'",
        "index.html: code block 2 is empty",
        "index.html: Markdown left as text: '[link](other.md)'",
        "index.html: Markdown left as text: '![a picture](a.png)'",
        "index.html: Sphinx role left as text: ':class:'",
        "index.html: a block quote in a block quote (1 times): doctest prompts read as Markdown?",
        "index.html: image not found: img/b.png",
        "index.html: link to a missing file: nowhere/",
        "index.html: link to a missing anchor: #bottom",
    ]
    assert check_site.main([str(site)]) == 1


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation site, built strictly as CI builds it."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        check=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    return site


@pytest.mark.site
def test_the_built_site_passes_the_site_check(built_site: Path) -> None:
    assert check_site.check(built_site) == []
    html = (built_site / "concepts" / "emission" / "index.html").read_text()
    assert "suppress" in html and "Suppressed" in html  # the included code, highlighted


@pytest.mark.site
def test_every_page_loads_in_chromium_without_errors(built_site: Path) -> None:
    browser_check = _script("check_site_browser")
    if browser_check.find_browser(None) is None:
        pytest.skip("no Chromium on PATH (Debian: apt-get install chromium)")
    assert browser_check.main([str(built_site)]) == 0


@pytest.mark.site
def test_the_browser_check_reports_console_errors_and_broken_images(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    browser_check = _script("check_site_browser")
    if browser_check.find_browser(None) is None:
        pytest.skip("no Chromium on PATH (Debian: apt-get install chromium)")
    (tmp_path / "index.html").write_text(
        """<!doctype html><html><head><link rel="icon" href="data:,">
        <link rel="stylesheet" href="https://fonts.example.org/font.css"></head><body>
        <img src="missing.png"><script>console.error("boom"); missing();</script></body></html>"""
    )
    (tmp_path / "fine.html").write_text('<html><head><link rel="icon" href="data:,"></head></html>')
    assert browser_check.main([str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "index.html: console.error: boom" in out
    assert "index.html: uncaught exception: ReferenceError: missing is not defined" in out
    assert "index.html: image does not load: missing.png" in out
    assert "fine.html" not in out
    assert "1 of 2 pages fail" in err and "1 loads from other hosts not made" in err
