"""Every Flink interval-join conformance scenario, on every backend."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kstreamlike.frames import to_polars
from tests.conformance.scenarios import flink_interval_join, load, spark_path_first

_SCENARIOS = load("flink/interval-join")


def _late(frame: Any) -> Counter[tuple[Any, ...]]:
    rows = to_polars(frame).iter_rows(named=True)
    return Counter((r.get("side"), r["key"], r["ts"], r["value"]) for r in rows)


@pytest.mark.conformance
@pytest.mark.parametrize(
    "scenario", spark_path_first([s for _, s in _SCENARIOS]), ids=[stem for stem, _ in _SCENARIOS]
)
def test_flink_interval_join_scenario(scenario: dict[str, Any], backend: str) -> None:
    result, tags = flink_interval_join(scenario, backend)
    out = result.to_polars()
    actual = Counter(
        (r["key"], r["ts_left"], r["ts_right"], r["timestamp"]) for r in out.iter_rows(named=True)
    )
    expected = Counter(
        (r["key"], r["left_ts"], r["right_ts"], r["timestamp"]) for r in scenario["expected"]
    )
    assert actual == expected
    want_late = Counter(
        (r["side"], r["key"], r["ts"], r["value"]) for r in scenario["expected_late"]
    )
    assert _late(result.late_records()) == want_late
    for side, tag in tags.items():
        side_output = _late(result.get_side_output(tag))
        want = Counter((None, *k[1:]) for k in want_late.elements() if k[0] == side)
        assert side_output == want
    assert to_polars(result.invalid_records()).height == 0
