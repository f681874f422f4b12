"""kstreamlike: Kafka Streams and Flink windowing over DataFrames.

Example:
    >>> import kstreamlike as ks
    >>> rows = [{"user": "a", "ts": 10}, {"user": "a", "ts": 20}, {"user": "a", "ts": 70}]
    >>> table = (
    ...     ks.stream(rows, key="user", timestamp="ts")
    ...     .group_by_key()
    ...     .windowed_by(ks.TimeWindows.of_size_with_no_grace(50))
    ...     .count()
    ...     .suppress(ks.Suppressed.until_window_closes())
    ... )
    >>> table.collect().select("user", "window_start", "window_end", "count").rows()
    [('a', 0, 50, 2)]
"""

from narwhals import col, lit

from kstreamlike import agg, beam, viz
from kstreamlike.api.branched import Branched, BranchedKStream
from kstreamlike.api.flink import KeyedStream
from kstreamlike.api.flink_result import SingleOutputStreamOperator
from kstreamlike.api.interval_join import IntervalJoin, IntervalJoined, IntervalJoinedStream
from kstreamlike.api.join import JoinedStream
from kstreamlike.api.kafka import (
    KGroupedStream,
    KTable,
    SessionWindowedKStream,
    TimeWindowedKStream,
    WindowedKStream,
)
from kstreamlike.api.result import StreamResult
from kstreamlike.api.stream import KStream, stream
from kstreamlike.api.window_join import (
    CoGroupedStreams,
    EqualTo,
    JoinedStreams,
    Where,
    WindowJoinedStream,
    WithWindow,
)
from kstreamlike.api.windowed import WindowedStream
from kstreamlike.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from kstreamlike.custom_evictors import Evictor, EvictorContext, TimestampedValue
from kstreamlike.custom_triggers import Trigger, TriggerContext, TriggerResult
from kstreamlike.emit import EmitStrategy, Suppressed
from kstreamlike.errors import (
    CheckpointError,
    DuplicateArrivalOrderError,
    InvalidSpecError,
    KStreamLikeError,
    SchemaError,
    UnsupportedPlanError,
    UserFunctionError,
)
from kstreamlike.evictors import CountEvictor, DeltaEvictor, TimeEvictor
from kstreamlike.functions import (
    AggregateFunction,
    OutputTag,
    ProcessWindowContext,
    ProcessWindowFunction,
)
from kstreamlike.joins import JoinColumns, JoinWindows
from kstreamlike.triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
)
from kstreamlike.watermarks import WatermarkStrategy
from kstreamlike.windows import SessionWindows, SlidingWindows, TimeWindows

__version__ = "0.1.0"

__all__ = [
    "AggregateFunction",
    "Branched",
    "BranchedKStream",
    "CheckpointError",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountEvictor",
    "CountTrigger",
    "DeltaEvictor",
    "DeltaTrigger",
    "DuplicateArrivalOrderError",
    "EmitStrategy",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "Evictor",
    "EvictorContext",
    "GlobalWindows",
    "InvalidSpecError",
    "JoinColumns",
    "JoinWindows",
    "IntervalJoin",
    "IntervalJoined",
    "IntervalJoinedStream",
    "JoinedStreams",
    "CoGroupedStreams",
    "Where",
    "EqualTo",
    "WithWindow",
    "WindowJoinedStream",
    "JoinedStream",
    "KGroupedStream",
    "KStream",
    "KStreamLikeError",
    "KTable",
    "KeyedStream",
    "OutputTag",
    "ProcessWindowContext",
    "ProcessWindowFunction",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "SchemaError",
    "SessionWindowedKStream",
    "SessionWindows",
    "SingleOutputStreamOperator",
    "SlidingEventTimeWindows",
    "SlidingWindows",
    "StreamResult",
    "Suppressed",
    "TimeEvictor",
    "TimeWindowedKStream",
    "TimeWindows",
    "TimestampedValue",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "UnsupportedPlanError",
    "UserFunctionError",
    "WatermarkStrategy",
    "WindowedKStream",
    "WindowedStream",
    "__version__",
    "agg",
    "beam",
    "col",
    "lit",
    "stream",
    "viz",
]
