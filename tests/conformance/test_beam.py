"""Every Beam conformance scenario (Beam's trigger transcripts, adapted to the Java runner
core, and the facts of Beam's Java runner-core tests), on every backend: the reference
interpreter, Polars and Spark all run every Beam plan."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.beam_scenarios import beam_pipeline, pane_rows
from tests.conformance.scenarios import load


@pytest.mark.conformance
@pytest.mark.parametrize("scenario", [pytest.param(s, id=stem) for stem, s in load("beam")])
def test_beam_scenario(scenario: dict[str, Any], backend: str) -> None:
    result = beam_pipeline(scenario, backend)
    assert pane_rows(result.collect()) == scenario["expected"]
    late = [
        {"key": r["key"], "ts": r["ts"], "reason": r["reason"], "watermark": r["watermark"]}
        for r in result.late_records().iter_rows(named=True)
    ]
    assert late == scenario["expected_late"]
    assert result.invalid_records().height == 0
