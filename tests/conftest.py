"""Shared fixtures: every behavioural test runs on every backend."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from kstreamlike.backends import BACKENDS
from kstreamlike.errors import UnsupportedPlanError

# The backend fixture is a constant string, so sharing it across examples is safe.
SUPPRESSED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]

# Two layers. The default one (`pytest`, the README's command) proves every code path once:
# every test on the reference and Polars backends, and on Spark the tests written for Spark,
# the differential properties marked ``spark_path`` (few examples) and one conformance
# scenario per code path. The full layer (`KSTREAMLIKE_TESTS=full pytest`) adds every generic
# test on Spark and more Hypothesis examples everywhere. `KSTREAMLIKE_TESTS=rest pytest` (CI's
# second run, after the default layer) runs only what the full layer adds: the tests the
# default layer leaves out, with the full layer's budgets.
LAYERS = ("default", "full", "rest")
LAYER = os.environ.get("KSTREAMLIKE_TESTS", "default")
if LAYER not in LAYERS:
    raise pytest.UsageError(f"KSTREAMLIKE_TESTS={LAYER!r}: expected one of {', '.join(LAYERS)}")
FULL = LAYER != "default"

# Hypothesis profiles, derandomized without an example database, so that every machine draws
# the same examples and a fresh clone gets CI's verdict: "ci" (the default layer) and "full"
# (the full layer). Random exploration is opt-in: HYPOTHESIS_PROFILE=dev (150 examples) or
# thorough (2000). A failing example any profile finds is kept in its test as an explicit
# @example (or a unit test), so that it stays found.
_FIXED = {"derandomize": True, "database": None}
settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=SUPPRESSED, **_FIXED
)
settings.register_profile(
    "full", max_examples=100, deadline=None, suppress_health_check=SUPPRESSED, **_FIXED
)
settings.register_profile("dev", max_examples=150, deadline=None, suppress_health_check=SUPPRESSED)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=SUPPRESSED
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "full" if FULL else "ci"))


def _generic_spark(item: pytest.Item) -> bool:
    """Whether ``item`` is a generic test (the ``backend`` or ``compiled_backend`` fixture)
    drawn on Spark."""
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "spark" in (
        callspec.params.get("backend"),
        callspec.params.get("compiled_backend"),
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Choose the layer's tests.

    Tests marked ``site`` build the documentation site: they run only when a marker
    expression names them (``pytest -m site``). Outside the full layer, tests marked
    ``full``, and generic tests drawn on Spark that no ``spark_path`` mark names as the one
    proving a Spark code path, are deselected (the full layer runs them). The ``rest`` layer
    keeps exactly these.
    """
    if not re.search(r"\bsite\b", config.option.markexpr or ""):
        skip = pytest.mark.skip(reason="builds the documentation site: run with `pytest -m site`")
        for item in items:
            if item.get_closest_marker("site") is not None:
                item.add_marker(skip)
    if LAYER == "full":
        return
    kept, deselected = [], []
    for item in items:
        in_full = item.get_closest_marker("full") is not None or (
            _generic_spark(item) and item.get_closest_marker("spark_path") is None
        )
        (deselected if in_full == (LAYER == "default") else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


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
    """The local Spark session every Spark test of a test worker shares (two cores, three
    shuffle partitions that are never coalesced, so scans cross block boundaries)."""
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


@pytest.fixture(params=["polars", pytest.param("spark", marks=pytest.mark.spark)])
def compiled_backend(request: pytest.FixtureRequest) -> str:
    """The name of each compiled backend, for the differential tests against the reference
    interpreter (Spark starts the shared session). Each test takes its Hypothesis example
    budget per backend from :func:`tests.strategies.budget`."""
    if request.param == "spark":
        request.getfixturevalue("spark")
    return str(request.param)
