"""The job API: batches checked against the pipeline's schema, the end of the input,
fetch, metrics, a restart in a new process."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

import kstreamlike as ks

FRAME = pl.DataFrame({"o": [0, 1, 2], "k": ["a", "b", "a"], "j": [1, 1, 2], "ts": [1, 4, 15]})


def _table() -> ks.KTable[pl.DataFrame]:
    stream = ks.stream(FRAME.clear(), key=["k", "j"], timestamp="ts", order_by="o")
    windows = ks.TimeWindows.of_size_and_grace(10, 10)
    return stream.group_by_key().windowed_by(windows).count()


def test_a_batch_must_have_the_pipeline_columns() -> None:
    job = _table().start()
    with pytest.raises(ks.SchemaError, match="'j'"):
        job.process(FRAME.drop("j"))
    with pytest.raises(ks.SchemaError, match="'ts'"):
        job.process(FRAME.with_columns(pl.col("ts").cast(pl.String)))
    # the rows of the frame the pipeline was built on are not processed: it gives the schema
    assert job.process(FRAME).collect().height == 3


def test_nothing_follows_the_end_of_the_input() -> None:
    job = _table().start()
    job.process(FRAME)
    assert job.finish().collect().height == 0  # Kafka never sees the end of its input
    with pytest.raises(ks.KStreamLikeError, match="ended"):
        job.process(FRAME)
    with pytest.raises(ks.KStreamLikeError, match="ended"):
        job.finish()


def test_fetch_and_metrics() -> None:
    job = _table().start()
    job.process(FRAME)
    assert job.fetch(("a", 1)).select("window_start", "count").rows() == [(0, 1)]
    assert job.fetch(("a", 2), 10, 10).select("window_start", "count").rows() == [(10, 1)]
    assert job.fetch(("a", 2), 0, 5).height == 0
    with pytest.raises(ks.KStreamLikeError, match="2 values"):
        job.fetch("a")
    metrics = job.metrics()
    assert (metrics.rows, metrics.open_windows, metrics.clocks, metrics.positions) == (
        3,
        3,
        {None: 15},
        {None: 3},
    )
    assert metrics.state_bytes > 0 and metrics.last_batch_seconds >= 0


def test_a_spark_pipeline_cannot_start() -> None:
    table = ks.stream(FRAME, key="k", timestamp="ts", backend="spark").group_by_key()
    with pytest.raises(ks.UnsupportedPlanError, match="Structured Streaming"):
        table.windowed_by(ks.TimeWindows.of(10)).count().start()


SCRIPT = """
import sys
import polars as pl
import kstreamlike as ks

frame = pl.DataFrame({"o": list(range(8)), "k": ["a", "b"] * 4, "ts": [1, 3, 9, 12, 14, 30, 2, 31]})
stream = ks.stream(frame.clear(), key="k", timestamp="ts", order_by="o")
windowed = stream.group_by_key().windowed_by(ks.SessionWindows.of_inactivity_gap_and_grace(5, 2))
table = windowed.aggregate(lambda: "", lambda k, v, a: a + str(v["ts"]), lambda k, a, b: a + b)
job = table.start(checkpoint=sys.argv[1])
first = job.batch_id
out = [job.process(frame[i : i + 2]).collect() for i in range(2 * first, 2 * first + 4, 2)]
job.close()
print(first, pl.concat(out).rows())
"""


def test_a_restart_in_a_new_process(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(SCRIPT))

    def run() -> str:
        done = subprocess.run(
            [sys.executable, str(script), str(tmp_path / "state")],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    first, second = run(), run()
    assert first.startswith("0 ") and second.startswith("2 ")
    frame = pl.DataFrame(
        {"o": list(range(8)), "k": ["a", "b"] * 4, "ts": [1, 3, 9, 12, 14, 30, 2, 31]}
    )
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o", backend="reference")
    windowed = stream.group_by_key().windowed_by(
        ks.SessionWindows.of_inactivity_gap_and_grace(5, 2)
    )
    table = windowed.aggregate(lambda: "", lambda k, v, a: a + str(v["ts"]), lambda k, a, b: a + b)
    rows = ast.literal_eval(first[2:]) + ast.literal_eval(second[2:])
    assert rows == table.collect().rows()


def test_a_failed_batch_stops_the_job(tmp_path: Path) -> None:
    job = _table().start(checkpoint=tmp_path)
    job.process(FRAME[:1])
    with pytest.raises(ks.DuplicateArrivalOrderError):
        job.process(FRAME[:2])
    with pytest.raises(ks.KStreamLikeError, match="start the job again"):
        job.process(FRAME[1:])
    restarted = _table().start(checkpoint=tmp_path)
    # asking for batch 1 committed batch 0; batch 1 is fed again
    assert restarted.batch_id == 1
    assert restarted.process(FRAME[1:]).collect().height == 2


def test_stateless_operations_run_on_each_batch() -> None:
    """A filter, a map_values and a select_key before the window run on every batch, and the
    batches' outputs together are the one-shot replay's."""
    frame = pl.DataFrame(
        {"o": range(8), "k": list("abcabcab"), "ts": [1, 2, 3, 12, 13, 14, 25, 26]}
    )
    stream = ks.stream(frame, key="k", value="ts", timestamp="ts", order_by="o")
    stream = stream.filter(ks.col("k") != "c").map_values(lambda v: v * 10)
    stream = stream.select_key(lambda k, v: k.upper())
    table = stream.group_by_key().windowed_by(ks.TimeWindows.of(10)).reduce(lambda a, b: a + b)
    job = table.start()
    outputs = [job.process(frame[i : i + 3]).collect() for i in range(0, 8, 3)]
    outputs.append(job.finish().collect())
    assert pl.concat(outputs).equals(table.collect())
    assert table.collect()["k"].to_list()[0] == "A"


def test_an_expansion_cannot_start_a_live_job() -> None:
    stream = ks.stream(FRAME, key="k", value="ts", timestamp="ts", order_by="o")
    table = stream.flat_map_values(lambda v: [v, v]).group_by_key()
    with pytest.raises(ks.UnsupportedPlanError, match="flat_map"):
        table.windowed_by(ks.TimeWindows.of(10)).count().start()


def test_a_snapshot_resumes_the_same_pipeline_only() -> None:
    from kstreamlike.errors import CheckpointError
    from kstreamlike.live import Job
    from kstreamlike.plan.lower import lower

    def table(size: int) -> ks.KTable[pl.DataFrame]:
        stream = ks.stream([{"k": "a", "ts": 1}], key="k", timestamp="ts").group_by_key()
        return stream.windowed_by(ks.TimeWindows.of(size)).count()

    job = table(10).start()
    job.process([{"k": "a", "ts": 3}, {"k": "a", "ts": 12}])
    again = Job.resume(lower(table(10).plan), job.snapshot(), backend="polars")
    assert again.batch_id == 1 and again.metrics().rows == 2
    assert again.process([{"k": "a", "ts": 14}]).collect()["count"].to_list() == [2]
    with pytest.raises(CheckpointError, match=r"different pipeline(.|\n)*size=20"):
        Job.resume(lower(table(20).plan), job.snapshot(), backend="polars")
