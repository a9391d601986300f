"""Prometheus metrics, in a registry of the application's own (tests and embedders get no globals).

Requests are labelled by route template, never by raw path, so names and namespaces cannot blow up
the series count. Source caches are read at scrape time through
:class:`~apiserver.sources.base.ReportsCacheStats`, so sources need not know Prometheus.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from apiserver.sources.base import ReportsCacheStats

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_PREFIX = "kubevirt_expand"
# Rendering takes microseconds to milliseconds; cluster reads and timeouts reach seconds.
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class _SourceCollector(Collector):
    def __init__(self, source: ReportsCacheStats) -> None:
        self._source = source

    def collect(self) -> Iterable[Metric]:
        size = GaugeMetricFamily(
            f"{_PREFIX}_source_cache_objects", "Objects held by a cache of the source.", labels=["cache"]
        )
        hits = CounterMetricFamily(
            f"{_PREFIX}_source_cache_hits", "Lookups a cache of the source answered.", labels=["cache"]
        )
        misses = CounterMetricFamily(
            f"{_PREFIX}_source_cache_misses",
            "Lookups a cache of the source could not answer.",
            labels=["cache"],
        )
        for stats in self._source.cache_stats():
            size.add_metric([stats.cache], stats.size)
            hits.add_metric([stats.cache], stats.hits)
            misses.add_metric([stats.cache], stats.misses)
        return [size, hits, misses]


class Metrics:
    """Every metric the server exports."""

    def __init__(self) -> None:
        # The ``*_created`` series double the output and no dashboard reads them.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry()
        self.requests = Counter(
            f"{_PREFIX}_http_requests",
            "HTTP requests by route template, method and response code.",
            ["endpoint", "verb", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            f"{_PREFIX}_http_request_duration_seconds",
            "Time from receiving a request to finishing its response, by route template and method.",
            ["endpoint", "verb"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            f"{_PREFIX}_http_requests_in_flight", "Requests being served.", registry=self.registry
        )
        self.render_errors = Counter(
            f"{_PREFIX}_render_errors",
            "Expand requests that failed, by Status reason (Invalid, NotFound, ServiceUnavailable, ...).",
            ["reason"],
            registry=self.registry,
        )

        # Route templates are few (the router's, or "other"), so this stays small.
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def watch_source(self, source: object) -> None:
        """Export the cache figures of ``source`` if it reports any."""
        if isinstance(source, ReportsCacheStats):
            self.registry.register(_SourceCollector(source))

    def observe(self, endpoint: str, verb: str, code: int, seconds: float) -> None:
        # labels() takes a lock and builds a key each time: keep the children of the few combinations.
        children = self._children.get((endpoint, verb, code))
        if children is None:
            children = (self.requests.labels(endpoint, verb, str(code)), self.latency.labels(endpoint, verb))
            self._children[(endpoint, verb, code)] = children
        children[0].inc()
        children[1].observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
