"""The compiled kernels where nothing next to the package can be written (a read-only install,
a Spark executor's unpacked archive with a read-only home)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kstreamlike
from kstreamlike.kernels import compiling

# KIP-450 sliding windows emitted on close run the compiled emission-order kernel.
_PIPELINE = textwrap.dedent(
    """
    import time
    import polars as pl
    import kstreamlike as ks

    frame = pl.DataFrame({"k": ["a", "a", "b", "a"], "ts": [1, 5, 12, 30], "v": [1, 2, 3, 4]})
    windows = ks.SlidingWindows.of_time_difference_and_grace(10, 5)
    started = time.perf_counter()
    out = (
        ks.stream(frame, key="k", value="v", timestamp="ts", backend="polars")
        .group_by_key()
        .windowed_by(windows)
        .emit_strategy(ks.EmitStrategy.on_window_close())
        .count()
        .collect()
    )
    print(out.select("k", "window_start", "count").rows())
    print(f"first call {time.perf_counter() - started:.1f} s")
    print(ks.__file__)
    """
)


def _read_only_install(root: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the package where no ``__pycache__`` directory can be made (a file is in
    the way), and an environment whose home and cache directories cannot be made either."""
    site = root / "site"
    shutil.copytree(
        Path(kstreamlike.__file__).parent,
        site / "kstreamlike",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for directory in [site / "kstreamlike", *(site / "kstreamlike").rglob("*")]:
        if directory.is_dir():
            (directory / "__pycache__").write_text("")
    blocked = root / "blocked"
    blocked.write_text("")
    tmp = root / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(
        PYTHONPATH=str(site),
        PYTHONDONTWRITEBYTECODE="1",
        HOME=str(blocked / "home"),
        XDG_CACHE_HOME=str(blocked / "cache"),
        TMPDIR=str(tmp),
    )
    return tmp, env


@pytest.mark.full
def test_kernels_compile_and_cache_where_the_package_and_home_are_read_only(
    tmp_path: Path,
) -> None:
    tmp, env = _read_only_install(tmp_path)
    runs = [
        subprocess.run(
            [sys.executable, "-c", _PIPELINE],
            env=env,
            cwd=tmp,  # not the project directory, whose package would come first
            capture_output=True,
            text=True,
            check=False,
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout.splitlines()[0] == runs[1].stdout.splitlines()[0]
    assert runs[0].stdout.startswith("[('a', 0, 2), ('a', 2, 1), ('b', 2, 1)]")
    assert str(tmp_path / "site") in runs[0].stdout  # the read-only copy ran
    # the machine code went to the fallback directory under the temporary directory
    cached = list(tmp.glob("kstreamlike-numba-*/**/*.nbi"))
    assert cached, (list(tmp.rglob("*")), runs[0].stdout, runs[0].stderr)


def test_without_any_writable_cache_the_kernels_compile_uncached(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # numba finds no cache locator (only the user-provided one, with no directory set) and
    # the fallback directory cannot be made (a file is in the way)
    monkeypatch.setattr(compiling.config, "CACHE_LOCATOR_CLASSES", "UserProvidedCacheLocator")
    monkeypatch.setattr(compiling.config, "CACHE_DIR", "")
    in_the_way = tmp_path / "file"
    in_the_way.write_text("")
    monkeypatch.setattr(compiling, "fallback_cache_dir", lambda: str(in_the_way))

    def total(values: np.ndarray) -> int:
        out = 0
        for v in values:
            out += v
        return out

    kernel = compiling.compiled(total)
    assert kernel(np.arange(4)) == 6
    assert kernel.stats.cache_path is None  # type: ignore[attr-defined]


def test_without_a_default_cache_the_kernels_cache_in_the_fallback_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(compiling.config, "CACHE_LOCATOR_CLASSES", "UserProvidedCacheLocator")
    monkeypatch.setattr(compiling.config, "CACHE_DIR", "")
    fallback = tmp_path / "cache"
    monkeypatch.setattr(compiling, "fallback_cache_dir", lambda: str(fallback))

    def twice(x: int) -> int:
        return 2 * x

    kernel = compiling.compiled(twice)
    assert kernel(21) == 42
    assert kernel.stats.cache_path.startswith(str(fallback))  # type: ignore[attr-defined]
    assert list(fallback.rglob("*.nbi"))
    assert compiling.config.CACHE_DIR == ""  # the setting is restored
