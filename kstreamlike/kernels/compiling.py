"""How the compiled kernels are compiled: numba, with machine code cached on disk.

numba caches a compiled function next to its source (``__pycache__``), or, when the package
directory is read-only (a system-wide install, a Spark executor's unpacked archive), in the
user's cache directory. Where neither can be written (an executor whose home is read-only
too), numba refuses to cache at all and raises when the function is defined. kstreamlike
then caches in a per-user directory under the system's temporary directory
(:func:`fallback_cache_dir`), and, if even that cannot be written, compiles without a cache:
every process then compiles each kernel once, on its first call. ``NUMBA_CACHE_DIR``, when
set, takes precedence over all of these.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import numba
from numba.core import config as _numba_config

# numba's settings are set at run time, which type checkers cannot see
config: Any = _numba_config

__all__ = ["compiled", "fallback_cache_dir", "inlined"]

_F = TypeVar("_F", bound=Callable[..., Any])


def fallback_cache_dir() -> str:
    """The compile cache used when neither the package directory nor the user's cache
    directory can be written: ``kstreamlike-numba-<user id>`` in the temporary directory.

    Example:
        >>> os.path.basename(fallback_cache_dir()).startswith("kstreamlike-numba-")
        True
    """
    user = os.getuid() if hasattr(os, "getuid") else os.getpid()
    return os.path.join(tempfile.gettempdir(), f"kstreamlike-numba-{user}")


@contextmanager
def _cache_dir(path: str) -> Iterator[None]:
    # numba reads its cache directory when a function is defined (the locator keeps the
    # path), so setting it around the definition confines it to this function.
    before = config.CACHE_DIR
    config.CACHE_DIR = path
    try:
        yield
    finally:
        config.CACHE_DIR = before


def _njit(fn: _F, **options: Any) -> _F:
    try:
        return cast(_F, numba.njit(cache=True, **options)(fn))
    except RuntimeError as error:  # "cannot cache function ...: no locator available"
        if "no locator available" not in str(error):
            raise
    try:
        os.makedirs(fallback_cache_dir(), exist_ok=True)
        with _cache_dir(fallback_cache_dir()):
            return cast(_F, numba.njit(cache=True, **options)(fn))
    except (OSError, RuntimeError):
        return cast(_F, numba.njit(cache=False, **options)(fn))


def compiled(fn: _F) -> _F:
    """``fn`` compiled by numba, releasing the GIL, with its machine code cached on disk
    (see the module documentation for where), so a machine compiles it once.

    Example:
        >>> import numpy as np
        >>> @compiled
        ... def total(values):
        ...     out = 0
        ...     for v in values:
        ...         out += v
        ...     return out
        >>> int(total(np.arange(5)))
        10
    """
    return _njit(fn, nogil=True)


def inlined(fn: _F) -> _F:
    """A helper of a kernel, compiled into its callers (a call per window update, with a
    dozen array arguments, would cost more than the update).

    Example:
        >>> @inlined
        ... def twice(x):
        ...     return 2 * x
        >>> @compiled
        ... def quadruple(x):
        ...     return twice(twice(x))
        >>> quadruple(3)
        12
    """
    return _njit(fn, nogil=True, inline="always")
