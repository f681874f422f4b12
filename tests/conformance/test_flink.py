"""Every Flink conformance scenario, on every backend."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.conformance.scenarios import (
    ScenarioNotSupported,
    flink_pipeline,
    load,
    spark_path_marks,
)


def _params() -> list[Any]:
    params = []
    for stem, scenario in load("flink"):
        marks: list[pytest.MarkDecorator] = spark_path_marks(stem)
        try:
            flink_pipeline(scenario, "reference")
        except ScenarioNotSupported as e:
            marks.append(pytest.mark.xfail(raises=ScenarioNotSupported, reason=str(e)))
        params.append(pytest.param(scenario, id=stem, marks=marks))
    return params


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    value = row["value"]
    return (
        row["key"],
        row["window_start"],
        row["window_end"],
        tuple(value) if isinstance(value, list) else value,
        row["timestamp"],
    )


@pytest.mark.conformance
@pytest.mark.parametrize("scenario", _params())
def test_flink_scenario(scenario: dict[str, Any], backend: str) -> None:
    result, tag = flink_pipeline(scenario, backend)
    out = result.collect()
    value = "value" if "value" in out.columns else "count"
    actual = [
        {
            "key": r["key"],
            "window_start": r["window_start"],
            "window_end": r["window_end"],
            "value": r[value],
            "timestamp": r["timestamp"],
        }
        for r in out.iter_rows(named=True)
    ]
    assert Counter(map(_key, actual)) == Counter(map(_key, scenario["expected"]))
    late = result.get_side_output(tag) if scenario.get("late_output_tag") else result.late_records()
    got_late = Counter((r["key"], r["ts"], r["value"]) for r in late.iter_rows(named=True))
    want_late = Counter(
        (r["key"], r["ts"], r["value"]) for r in scenario.get("expected_late") or []
    )
    if scenario.get("late_output_tag"):
        assert got_late == want_late
    else:
        # Without a tag Flink drops late elements; kstreamlike still reports them.
        assert want_late == Counter()
