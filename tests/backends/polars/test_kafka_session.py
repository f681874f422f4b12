"""The Polars backend's general path for Kafka session windows (what very dense keys take)
equals the reference interpreter; the properties common to every compiled backend are in
``tests/differential/test_kafka_session.py``."""

from __future__ import annotations

from unittest.mock import patch

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from tests.differential.compare import assert_same_as_reference
from tests.differential.kafka import sessions
from tests.strategies import AGGREGATIONS
from tests.strategies.kafka import session_frames


@given(frame=session_frames(), mode=st.sampled_from(["update", "close"]))
def test_sessions_on_the_general_path(frame: pl.DataFrame, mode: str) -> None:
    # Without a budget for pairs, acceptance and on-close emission take the general path
    # (what very dense keys do).
    with patch("kstreamlike.kernels.kafka.session.local._budget", lambda records: -1):
        table = sessions(frame, 6, 3, mode, "p", list(AGGREGATIONS))
        assert_same_as_reference(table, "polars")
