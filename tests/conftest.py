"""Shared fixtures: every behavioural test runs on every backend."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from kstreamlike.backends import BACKENDS
from kstreamlike.errors import UnsupportedPlanError

# The backend fixture is a constant string, so sharing it across examples is safe.
SUPPRESSED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]

# Hypothesis profiles. "ci", the default everywhere (with or without a CI variable), draws a
# fixed set of examples (derandomized, no example database), so a fresh clone gets the
# verdict CI gets. The broader, random exploration is opt-in: HYPOTHESIS_PROFILE=dev (150
# examples) or thorough (2000). A failing example any profile finds is kept in the test as
# an explicit @example (or a unit test), so that it stays found.
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=SUPPRESSED,
    derandomize=True,
    database=None,
)
settings.register_profile("dev", max_examples=150, deadline=None, suppress_health_check=SUPPRESSED)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=SUPPRESSED
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A backend gap is an expected failure that names the exception and the missing
    feature, never a silent skip: UnsupportedPlanError turns the test into an xfail."""
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(UnsupportedPlanError):
        report.outcome = "skipped"
        report.wasxfail = f"UnsupportedPlanError: {call.excinfo.value}"


@pytest.fixture(scope="session")
def spark() -> Any:
    """The one local Spark session every Spark test shares (two cores, three shuffle
    partitions that are never coalesced, so scans cross block boundaries)."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kstreamlike-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "3")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    """The name of each available backend (Spark tests start the shared session)."""
    if request.param == "spark":
        request.getfixturevalue("spark")
    return str(request.param)
