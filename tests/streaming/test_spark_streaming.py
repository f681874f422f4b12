"""Pipelines on streaming Spark DataFrames: the streamed outputs equal the batch replay for
any micro-batching, across a stop and a failure, with re-delivered files dropped."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import kstreamlike as ks
from kstreamlike.errors import InvalidSpecError, UnsupportedPlanError

pytestmark = pytest.mark.spark

Build = Callable[[Any], Any]
OUTPUTS = ("main", "late", "invalid")


def _rows(n: int = 240, seed: int = 3) -> pl.DataFrame:
    """Three partitions, out-of-order event times with some late records, a null key and
    a negative timestamp."""
    import random

    rng = random.Random(seed)
    rows = []
    for offset in range(n):
        ts = offset * 5 + rng.randint(-60, 10)
        rows.append(
            {"p": offset % 3, "o": offset, "k": rng.choice("abcd"), "ts": ts, "v": offset % 7}
        )
    rows[17]["k"] = None
    return pl.DataFrame(rows)


def _write_files(frame: pl.DataFrame, directory: Path, files: int, first: int = 0) -> None:
    """``frame`` as ``files`` Parquet files of consecutive rows, modified one after another
    (the file source takes files in order of modification)."""
    directory.mkdir(parents=True, exist_ok=True)
    size = -(-frame.height // files)
    for i in range(files):
        path = directory / f"part-{first + i:04d}.parquet"
        frame.slice(i * size, size).write_parquet(path)
        stamp = 1_700_000_000 + 10 * (first + i)
        os.utime(path, (stamp, stamp))


def _source(spark: Any, directory: Path, per_trigger: int) -> Any:
    schema = spark.read.parquet(str(directory)).schema
    reader = spark.readStream.schema(schema).option("maxFilesPerTrigger", per_trigger)
    return reader.parquet(str(directory))


def _run(table: Any, out: Path) -> Any:
    query = table.write_stream(
        str(out / "checkpoint"),
        main=str(out / "main"),
        late=str(out / "late"),
        invalid=str(out / "invalid"),
        trigger={"availableNow": True},
    )
    query.awaitTermination()
    return query


def _read(out: Path, kind: str) -> pl.DataFrame:
    return pl.read_parquet(f"{out / kind}/**/*.parquet", hive_partitioning=True)


def _check_equal(out: Path, expected: Any, batches: int | None = None) -> None:
    """The streamed outputs, in any order, equal the batch replay's."""
    wanted = {
        "main": expected.collect(),
        "late": expected.late_records(),
        "invalid": expected.invalid_records(),
    }
    for kind in OUTPUTS:
        got, frame = _read(out, kind), wanted[kind]
        if got.is_empty():
            assert frame.is_empty(), kind
            continue
        if batches is not None:  # (a micro-batch without rows of an output writes none)
            assert set(got["batch_id"]) <= set(range(batches))
            assert kind != "main" or set(got["batch_id"]) == set(range(batches))
        got = got.select(frame.columns)
        assert got.sort(frame.columns).equals(frame.sort(frame.columns)), kind


def _kafka_tumbling(data: Any) -> Any:
    stream = ks.stream(data, key="k", timestamp="ts", order_by="o", partition="p")
    windows = ks.TimeWindows.of_size_and_grace(50, 20)
    return stream.group_by_key().windowed_by(windows).aggregate(ks.agg.count(), ks.agg.sum("v"))


@pytest.mark.parametrize(
    "per_trigger",
    [pytest.param(1, marks=pytest.mark.full), 2, pytest.param(5, marks=pytest.mark.full)],
)
def test_the_streamed_outputs_equal_the_batch_replay(
    spark: Any, tmp_path: Path, per_trigger: int
) -> None:
    frame = _rows()
    _write_files(frame, tmp_path / "in", 5)
    query = _run(_kafka_tumbling(_source(spark, tmp_path / "in", per_trigger)), tmp_path)
    _check_equal(tmp_path, _kafka_tumbling(frame), batches=-(-5 // per_trigger))
    assert query.lastProgress is not None


def _kafka_sessions(data: Any) -> Any:
    stream = ks.stream(data, key="k", timestamp="ts", order_by="o", partition="p")
    windows = ks.SessionWindows.of_inactivity_gap_and_grace(15, 30)
    table = stream.group_by_key().windowed_by(windows).count()
    return table.suppress(ks.Suppressed.until_window_closes())


def _kafka_sliding_python(data: Any) -> Any:
    stream = ks.stream(data, key="k", value="v", timestamp="ts", order_by="o", partition="p")
    windows = ks.SlidingWindows.of_time_difference_and_grace(40, 20)
    return stream.group_by_key().windowed_by(windows).reduce(lambda a, b: a + b)


def _flink_stream(data: Any) -> Any:
    """A Flink keyed stream; a stream has no end, so its replay is of an unbounded source."""
    strategy = ks.WatermarkStrategy.for_bounded_out_of_orderness(20)
    stream = ks.stream(
        data,
        key="k",
        timestamp="ts",
        order_by="o",
        partition="p",
        watermarks=strategy,
        bounded=False,
    )
    return stream.key_by("k")


def _flink_tumbling_late(data: Any) -> Any:
    window = _flink_stream(data).window(ks.TumblingEventTimeWindows.of(50))
    return window.allowed_lateness(10).aggregate(ks.agg.sum("v"))


def _flink_count_evictor(data: Any) -> Any:
    window = _flink_stream(data).window(ks.SlidingEventTimeWindows.of(60, 20))
    window = window.trigger(ks.CountTrigger.of(3)).evictor(ks.CountEvictor.of(2))
    return window.aggregate(ks.agg.sum("v"))


@pytest.mark.full
@pytest.mark.parametrize(
    "build", [_kafka_sessions, _kafka_sliding_python, _flink_tumbling_late, _flink_count_evictor]
)
def test_every_profile_and_window_family_streams_as_it_replays(
    spark: Any, tmp_path: Path, build: Build
) -> None:
    frame = _rows()
    _write_files(frame, tmp_path / "in", 4)
    _run(build(_source(spark, tmp_path / "in", 2)), tmp_path)
    _check_equal(tmp_path, build(frame), batches=2)


def test_a_query_stopped_and_started_again_loses_and_doubles_nothing(
    spark: Any, tmp_path: Path
) -> None:
    frame = _rows()
    first, second = frame.slice(0, 120), frame.slice(120)
    _write_files(first, tmp_path / "in", 2)
    _run(_kafka_tumbling(_source(spark, tmp_path / "in", 1)), tmp_path)
    _write_files(second, tmp_path / "in", 2, first=2)
    # the state store provider may change between runs only through the checkpoint's
    # own configuration: the restart runs on the same provider
    _run(_kafka_tumbling(_source(spark, tmp_path / "in", 1)), tmp_path)
    _check_equal(tmp_path, _kafka_tumbling(frame), batches=4)


def test_a_failed_micro_batch_runs_again_and_replaces_its_partial_output(
    spark: Any, tmp_path: Path
) -> None:
    frame = _rows()
    _write_files(frame, tmp_path / "in", 3)
    blocker = tmp_path / "invalid"
    blocker.write_text("not a directory")  # the invalid records cannot be written
    table = _kafka_tumbling(_source(spark, tmp_path / "in", 1))
    with pytest.raises(Exception, match=r"batch|invalid|directory|exists"):
        _run(table, tmp_path)
    partial = tmp_path / "main" / "batch_id=0"
    assert partial.exists()  # written before the failure
    # what the failed attempt left there is replaced
    _rows().head(6).write_parquet(partial / "part-99999-00000.parquet")
    blocker.unlink()
    _run(_kafka_tumbling(_source(spark, tmp_path / "in", 1)), tmp_path)
    _check_equal(tmp_path, _kafka_tumbling(frame), batches=3)


def test_re_delivered_files_are_dropped_as_duplicates(spark: Any, tmp_path: Path) -> None:
    frame = _rows()

    def build(data: Any) -> Any:
        stream = ks.stream(
            data, key="k", timestamp="ts", order_by="o", partition="p", duplicates="drop"
        )
        windows = ks.TimeWindows.of_size_and_grace(50, 20)
        return stream.group_by_key().windowed_by(windows).count()

    _write_files(frame, tmp_path / "in", 4)
    # the second file is delivered again, after the third
    again = tmp_path / "in" / "part-0099.parquet"
    shutil.copy(tmp_path / "in" / "part-0001.parquet", again)
    stamp = 1_700_000_000 + 25
    os.utime(again, (stamp, stamp))
    _run(build(_source(spark, tmp_path / "in", 1)), tmp_path)
    expected = build(frame)
    for kind, wanted in (("main", expected.collect()), ("late", expected.late_records())):
        got = _read(tmp_path, kind).select(wanted.columns)
        assert got.sort(wanted.columns).equals(wanted.sort(wanted.columns)), kind
    dropped = _read(tmp_path, "invalid")
    assert dropped.filter(pl.col("reason") == "duplicate").height == 60
    assert dropped.filter(pl.col("reason") != "duplicate").height == (
        expected.invalid_records().height
    )


def test_the_state_store_can_be_rocksdb(spark: Any, tmp_path: Path) -> None:
    key = "spark.sql.streaming.stateStore.providerClass"
    rocksdb = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    before = spark.conf.get(key, None)
    spark.conf.set(key, rocksdb)
    try:
        frame = _rows()
        _write_files(frame, tmp_path / "in", 2)
        query = _run(_kafka_tumbling(_source(spark, tmp_path / "in", 1)), tmp_path)
        _check_equal(tmp_path, _kafka_tumbling(frame), batches=2)
        operators = query.lastProgress["stateOperators"]
        assert operators and operators[0]["numRowsTotal"] == 3  # one state row per partition
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def test_the_rate_source_streams_every_row_once(spark: Any, tmp_path: Path) -> None:
    rate = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", 50)
        .option("startTimestamp", 0)
        .option("advanceMillisPerBatch", 1000)
        .load()
        .selectExpr("value", "timestamp AS ts", "CAST(value % 3 AS STRING) AS k")
    )
    stream = ks.stream(rate, key="k", timestamp="ts", order_by="value")
    table = stream.group_by_key().windowed_by(ks.TimeWindows.of(timedelta(hours=1))).count()
    writer = table.stream_writer().option("checkpointLocation", str(tmp_path / "c"))
    query = writer.trigger(processingTime="200 milliseconds").start(main=str(tmp_path / "main"))
    try:
        while len([p for p in query.recentProgress if p["numInputRows"]]) < 3:
            query.awaitTermination(1)
    finally:
        query.stop()
    # (stopping may interrupt a micro-batch after its rows were written: it is not counted
    # as done, and a restart would write it again, replacing those rows)
    done = {p["batchId"] for p in query.recentProgress}
    main = _read(tmp_path, "main").filter(pl.col("batch_id").is_in(done))
    read = sum(p["numInputRows"] for p in query.recentProgress)
    # every update: one row per record, the last of each key counting its records
    assert main.height == read
    last = main.sort("emit_order").group_by("k").agg(pl.col("count").last())
    assert last["count"].sum() == read
    assert main["emit_order"].n_unique() == read


def test_a_kafka_source_maps_partition_and_offset(spark: Any, tmp_path: Path) -> None:
    """A frame with the Kafka source's schema, cast as the guide shows."""
    kafka = pl.DataFrame(
        {
            "key": [b"u1", b"u2", b"u1", b"u1"],
            "value": [b'{"amount": 3}', b'{"amount": 4}', b'{"amount": 5}', b'{"amount": 6}'],
            "topic": ["clicks"] * 4,
            "partition": [0, 1, 0, 0],
            "offset": [0, 0, 1, 2],
            "timestamp": [1_000, 2_000, 61_000, 1_500],
            "timestampType": [0] * 4,
        },
        schema_overrides={"partition": pl.Int32},
    ).with_columns(pl.from_epoch("timestamp", time_unit="ms"))
    _write_files(kafka, tmp_path / "in", 2)
    raw = _source(spark, tmp_path / "in", 1)
    clicks = raw.selectExpr(
        "CAST(key AS STRING) AS user",
        "CAST(get_json_object(CAST(value AS STRING), '$.amount') AS BIGINT) AS amount",
        "partition",
        "offset",
        "timestamp",
    )
    stream = ks.stream(
        clicks, key="user", timestamp="timestamp", order_by="offset", partition="partition"
    )
    windows = ks.TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=0))
    table = stream.group_by_key().windowed_by(windows).aggregate(ks.agg.sum("amount"))
    _run(table, tmp_path)
    main = _read(tmp_path, "main").sort("partition", "emit_order")
    assert main.select("user", "amount").rows() == [("u1", 3), ("u1", 5), ("u2", 4)]
    late = _read(tmp_path, "late")
    assert late.select("user", "offset", "reason").rows() == [("u1", 2, "late")]


def test_streaming_pipelines_are_checked_when_built(spark: Any, tmp_path: Path) -> None:
    frame = _rows()
    _write_files(frame, tmp_path / "in", 1)
    source = _source(spark, tmp_path / "in", 1)
    unordered = ks.stream(source, key="k", timestamp="ts", partition="p").group_by_key()
    with pytest.raises(InvalidSpecError, match="order_by"):
        unordered.windowed_by(ks.TimeWindows.of(10)).count().write_stream(str(tmp_path / "c"))
    table = _kafka_tumbling(source)
    with pytest.raises(UnsupportedPlanError, match="write_stream"):
        table.collect()
    with pytest.raises(InvalidSpecError, match="at least one output"):
        table.write_stream(str(tmp_path / "c"))
    with pytest.raises(InvalidSpecError, match="checkpoint"):
        table.stream_writer().start(main=str(tmp_path / "m"))
    recorded = _kafka_tumbling(spark.read.parquet(str(tmp_path / "in")))
    with pytest.raises(InvalidSpecError, match="recorded frame"):
        recorded.write_stream(str(tmp_path / "c"), main=str(tmp_path / "m"))


def test_outputs_can_go_to_tables(spark: Any, tmp_path: Path) -> None:
    frame = _rows()
    _write_files(frame, tmp_path / "in", 2)
    table = _kafka_tumbling(_source(spark, tmp_path / "in", 1))
    writer = table.stream_writer().option("checkpointLocation", str(tmp_path / "c"))
    names = {"main": "ks_stream_main", "late": "ks_stream_late"}
    try:
        for name in names.values():
            spark.sql(f"DROP TABLE IF EXISTS {name}")
        writer = writer.option("path", str(tmp_path / "tables"))
        query = writer.trigger(availableNow=True).to_table(**names)
        query.awaitTermination()
        expected = _kafka_tumbling(frame)
        got = pl.from_arrow(spark.table(names["main"]).toArrow())
        assert isinstance(got, pl.DataFrame)
        wanted = expected.collect()
        assert got["batch_id"].unique().sort().to_list() == [0, 1]
        got = got.select(wanted.columns)
        assert got.sort(wanted.columns).equals(wanted.sort(wanted.columns))
    finally:
        for name in names.values():
            spark.sql(f"DROP TABLE IF EXISTS {name}")


def _kafka_aggregate(data: Any) -> Any:
    stream = ks.stream(data, key="k", value="v", timestamp="ts", order_by="o", partition="p")
    windows = ks.TimeWindows.of_size_and_grace(50, 20)
    return stream.group_by_key().windowed_by(windows).aggregate(lambda: 0, lambda k, v, a: a + v)


def test_a_python_aggregation_is_written_with_its_value_type(spark: Any, tmp_path: Path) -> None:
    frame = _rows()
    _write_files(frame, tmp_path / "in", 2)
    table = _kafka_aggregate(_source(spark, tmp_path / "in", 1))
    with pytest.raises(UnsupportedPlanError, match="value_type"):
        table.write_stream(str(tmp_path / "c"), main=str(tmp_path / "main"))
    query = table.write_stream(
        str(tmp_path / "checkpoint"),
        main=str(tmp_path / "main"),
        late=str(tmp_path / "late"),
        invalid=str(tmp_path / "invalid"),
        trigger={"availableNow": True},
        value_type=pl.Int64,
    )
    query.awaitTermination()
    _check_equal(tmp_path, _kafka_aggregate(frame), batches=2)


def test_a_changed_pipeline_is_refused_on_restart(spark: Any, tmp_path: Path) -> None:
    frame = _rows()
    _write_files(frame.slice(0, 120), tmp_path / "in", 1)
    _run(_kafka_tumbling(_source(spark, tmp_path / "in", 1)), tmp_path)
    _write_files(frame.slice(120), tmp_path / "in", 1, first=1)
    stream = ks.stream(
        _source(spark, tmp_path / "in", 1), key="k", timestamp="ts", order_by="o", partition="p"
    )
    changed = stream.group_by_key().windowed_by(ks.TimeWindows.of_size_and_grace(60, 20)).count()
    with pytest.raises(Exception, match="different pipeline"):
        _run(changed, tmp_path)


def test_a_stream_without_partitions_runs_as_one_group(spark: Any, tmp_path: Path) -> None:
    frame = _rows().drop("p")

    def build(data: Any) -> Any:
        stream = ks.stream(data, key="k", timestamp="ts", order_by="o")
        windows = ks.TimeWindows.of_size_and_grace(50, 20)
        return stream.group_by_key().windowed_by(windows).count()

    _write_files(frame, tmp_path / "in", 2)
    query = _run(build(_source(spark, tmp_path / "in", 1)), tmp_path)
    _check_equal(tmp_path, build(frame), batches=2)
    assert query.lastProgress["stateOperators"][0]["numRowsTotal"] == 1


def test_an_output_without_rows_can_be_read(spark: Any, tmp_path: Path) -> None:
    """In-order records with valid keys: no late or invalid rows, yet every output's path
    holds its schema from the first micro-batch, so Spark reads it (no rows, no error)."""
    frame = pl.DataFrame({"p": [0] * 6, "o": range(6), "k": list("abab" + "ab"), "ts": range(6)})
    frame = frame.with_columns(v=pl.col("o") % 7)
    _write_files(frame, tmp_path / "in", 2)
    _run(_kafka_tumbling(_source(spark, tmp_path / "in", 1)), tmp_path)
    expected = _kafka_tumbling(frame)
    for kind, want in (("late", expected.late_records()), ("invalid", expected.invalid_records())):
        read = spark.read.parquet(str(tmp_path / kind))
        assert read.count() == 0
        assert [c for c in read.columns if c != "batch_id"] == want.columns
    assert spark.read.parquet(str(tmp_path / "main")).count() == expected.collect().height
    # the query's own session (its configuration changed) did not become the active one:
    # a Polars frame still runs on Spark (a regression)
    stream = ks.stream(frame, key="k", timestamp="ts", order_by="o", backend="spark")
    assert stream.group_by_key().windowed_by(ks.TimeWindows.of(50)).count().collect().height


def test_local_parquet_is_written_by_the_step_and_other_formats_by_spark(
    spark: Any, tmp_path: Path
) -> None:
    """Parquet on the local filesystem (with a ``compression`` option) is written by the
    stateful step's tasks, JSON by Spark's writer: the same rows either way."""
    import pyarrow.parquet as pq

    frame = _rows()
    _write_files(frame, tmp_path / "in", 2)
    expected = _kafka_tumbling(frame).collect()
    for fmt, out in (("parquet", tmp_path / "p"), ("json", tmp_path / "j")):
        writer = _kafka_tumbling(_source(spark, tmp_path / "in", 1)).stream_writer()
        writer = writer.format(fmt).option("checkpointLocation", str(out / "c"))
        query = (
            writer.option("compression", "gzip")
            .trigger(availableNow=True)
            .start(main=f"file://{out / 'main'}")
        )
        query.awaitTermination()
        batches = sorted(p.name for p in (out / "main").iterdir())
        assert batches == ["batch_id=0", "batch_id=1"]
        got = pl.from_arrow(spark.read.format(fmt).load(str(out / "main")).toArrow())
        assert isinstance(got, pl.DataFrame)
        got = got.select(expected.columns).cast(dict(expected.schema))
        assert got.sort(expected.columns).equals(expected.sort(expected.columns)), fmt
    files = sorted((tmp_path / "p" / "main" / "batch_id=0").glob("part-*.parquet"))
    assert files and (tmp_path / "p" / "main" / "batch_id=0" / "_SUCCESS").exists()
    assert pq.ParquetFile(files[0]).metadata.row_group(0).column(0).compression == "GZIP"
    assert list((tmp_path / "j" / "main" / "batch_id=0").glob("part-*.json.gz"))
