"""The Spark backend on a cluster of separate executor processes (``local-cluster``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.backends.spark.cluster_pipelines import PIPELINES

_ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.full
@pytest.mark.spark
def test_every_window_family_on_a_local_cluster_gives_the_polars_output() -> None:
    # Two executors of one core and 1 GiB each, in JVMs (and Python workers) of their own:
    # per-key kernels, broadcast tables and checkpoints cross process boundaries. A run of
    # its own, as a JVM holds one Spark master.
    run = subprocess.run(
        [sys.executable, "-m", "tests.backends.spark.cluster_pipelines", "local-cluster[2,1,1024]"],
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    assert [f"{name}: same as Polars" for name in PIPELINES] == [
        line for line in run.stdout.splitlines() if line.endswith("same as Polars")
    ]
