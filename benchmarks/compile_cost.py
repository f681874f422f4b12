"""The first-call cost of the compiled kernels: each pipeline that runs one runs in a fresh
process twice, first with an empty compile cache (the kernel is compiled), then with the
cache the first run filled (the kernel is loaded), and the table gives both times and their
difference, the compile cost a new executor pays once.

Run: ``python -m benchmarks.compile_cost``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

# Sliding windows' final results run the compiled store scan (records beyond grace) and
# the compiled emission order; the other pipelines run no compiled kernel.
_PIPELINES = {
    "KIP-450 sliding, on close": ".emit_strategy(ks.EmitStrategy.on_window_close())",
}

_RUN = textwrap.dedent(
    """
    import time
    import numpy as np
    import polars as pl
    import kstreamlike as ks

    rng = np.random.default_rng(0)
    n = 20_000
    ts = np.sort(rng.integers(0, 200_000, n))
    ts[::50] -= 3_000  # a few records out of order, within and beyond grace
    frame = pl.DataFrame({{"k": rng.integers(0, 100, n), "ts": ts, "v": rng.integers(0, 9, n)}})
    windows = ks.SlidingWindows.of_time_difference_and_grace(1_000, 2_000)
    started = time.perf_counter()
    (
        ks.stream(frame, key="k", value="v", timestamp="ts", backend="polars")
        .group_by_key()
        .windowed_by(windows){emit}
        .aggregate(ks.agg.count(), ks.agg.sum("v"))
        .collect()
    )
    print(time.perf_counter() - started)
    """
)


def _timed(code: str, cache: str) -> float:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    """Print the cold and warm first-call times of each pipeline."""
    print("| pipeline | first call, empty cache | first call, cache filled | compile cost |")
    print("| --- | ---: | ---: | ---: |")
    for name, emit in _PIPELINES.items():
        code = _RUN.format(emit=emit)
        with tempfile.TemporaryDirectory() as cache:
            cold = _timed(code, cache)
            warm = _timed(code, cache)
        print(f"| {name} | {cold:.1f} s | {warm:.1f} s | {cold - warm:.1f} s |")


if __name__ == "__main__":
    main()
