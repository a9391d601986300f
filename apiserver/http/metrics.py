"""Prometheus metrics, in a registry of the application's own (tests and embedders get no globals).

Requests are labelled by route template, never by raw path, so names and namespaces cannot blow up
the series count. Source caches are read at scrape time through
:class:`~apiserver.sources.base.ReportsCacheStats`, so sources need not know Prometheus.

The request metrics (count, latency histogram, in flight) are plain integers and floats bumped per
request and turned into Prometheus families only when scraped (:class:`_RequestCollector`): a
prometheus_client child takes a lock and several calls per update, a visible share of a request
answered from the response cache. Names, labels, types, buckets and values are those the client
library's Counter, Histogram and Gauge would export.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from apiserver.sources.base import ReportsCacheStats, ReportsProblems

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


class _ProblemsCollector(Collector):
    def __init__(self, source: ReportsProblems) -> None:
        self._source = source

    def collect(self) -> Iterable[Metric]:
        return [
            GaugeMetricFamily(
                f"{_PREFIX}_source_errors",
                "Inputs of the source (manifest files, the folder) whose latest read failed; what was "
                "read from them before is still served.",
                value=float(len(self._source.problems())),
            )
        ]


class _ReviewCollector(Collector):
    """A review cache's figures (decisions held, lookups answered from it, reviews asked), read at
    scrape time: what ``--authorize-references`` costs shows as reviews asked per request."""

    def __init__(self, review: str, figures: Callable[[], tuple[int, int, int]]) -> None:
        self._review = review
        self._figures = figures

    def collect(self) -> Iterable[Metric]:
        size, hits, misses = self._figures()
        labels = ["review"]
        held = GaugeMetricFamily(
            f"{_PREFIX}_review_cache_entries", "Decisions a review cache holds.", labels=labels
        )
        answered = CounterMetricFamily(
            f"{_PREFIX}_review_cache_hits",
            "Lookups a review cache answered without asking the cluster.",
            labels=labels,
        )
        asked = CounterMetricFamily(
            f"{_PREFIX}_review_cache_misses", "Reviews asked of the cluster.", labels=labels
        )
        held.add_metric([self._review], size)
        answered.add_metric([self._review], hits)
        asked.add_metric([self._review], misses)
        return [held, answered, asked]


class _Readings(Collector):
    """Figures read at scrape time from whoever keeps them: (name, help, type, read) each."""

    def __init__(self) -> None:
        self.readings: list[tuple[str, str, str, Callable[[], float]]] = []

    def collect(self) -> Iterable[Metric]:
        for name, text, kind, read in self.readings:
            family = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            yield family(f"{_PREFIX}_{name}", text, value=float(read()))


class _Latency:
    """One histogram series: observations per bucket (not cumulative; +Inf last) and their sum."""

    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(_BUCKETS) + 1)
        self.sum = 0.0


class _RequestCollector(Collector):
    """The request metrics, kept as numbers and exported at scrape time."""

    def __init__(self) -> None:
        # Route templates are few (the router's, or "other"), so these stay small.
        self.requests: dict[tuple[str, str, int], list[int]] = {}
        self.latency: dict[tuple[str, str], _Latency] = {}
        self.in_flight = 0
        self._le = [floatToGoString(b) for b in _BUCKETS] + ["+Inf"]  # type: ignore[no-untyped-call]

    def collect(self) -> Iterable[Metric]:
        requests = CounterMetricFamily(
            f"{_PREFIX}_http_requests",
            "HTTP requests by route template, method and response code.",
            labels=["endpoint", "verb", "code"],
        )
        for (endpoint, verb, code), count in list(self.requests.items()):
            requests.add_metric([endpoint, verb, str(code)], float(count[0]))
        latency = HistogramMetricFamily(
            f"{_PREFIX}_http_request_duration_seconds",
            "Time from receiving a request to finishing its response, by route template and method.",
            labels=["endpoint", "verb"],
        )
        for (endpoint, verb), series in list(self.latency.items()):
            total = 0
            buckets: list[tuple[str, float]] = []
            for le, n in zip(self._le, series.counts, strict=True):
                total += n
                buckets.append((le, float(total)))
            latency.add_metric([endpoint, verb], buckets, series.sum)
        in_flight = GaugeMetricFamily(
            f"{_PREFIX}_http_requests_in_flight", "Requests being served.", value=float(self.in_flight)
        )
        return [requests, latency, in_flight]


class Metrics:
    """Every metric the server exports."""

    def __init__(self) -> None:
        # The ``*_created`` series double the output and no dashboard reads them.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry()
        self._requests = _RequestCollector()
        self.registry.register(self._requests)
        self._readings = _Readings()
        self.registry.register(self._readings)
        self.render_errors = Counter(
            f"{_PREFIX}_render_errors",
            "Expand requests that failed, by Status reason (Invalid, NotFound, ServiceUnavailable, ...).",
            ["reason"],
            registry=self.registry,
        )

    def watch_source(self, source: object) -> None:
        """Export the cache figures and read problems of ``source`` if it reports any."""
        if isinstance(source, ReportsCacheStats):
            self.registry.register(_SourceCollector(source))
        if isinstance(source, ReportsProblems):
            self.registry.register(_ProblemsCollector(source))

    def watch_reviews(self, review: str, figures: Callable[[], tuple[int, int, int]]) -> None:
        """Export a review cache's figures (``review``: subjectaccessreviews, tokenreviews)."""
        self.registry.register(_ReviewCollector(review, figures))

    def read_at_scrape(
        self, name: str, text: str, read: Callable[[], float], *, counter: bool = False
    ) -> None:
        """Export ``kubevirt_expand_<name>`` as what ``read`` returns when scraped (a gauge, or a
        counter): for figures kept elsewhere (connections, bytes held)."""
        self._readings.readings.append((name, text, "counter" if counter else "gauge", read))

    def started(self) -> None:
        """A request came in (``kubevirt_expand_http_requests_in_flight``)."""
        self._requests.in_flight += 1

    def observe(self, endpoint: str, verb: str, code: int, seconds: float) -> None:
        """A request was answered: counted by code, its latency by route template and method; no
        longer in flight."""
        collector = self._requests
        collector.in_flight -= 1
        count = collector.requests.get((endpoint, verb, code))
        if count is None:
            count = collector.requests[(endpoint, verb, code)] = [0]
        count[0] += 1
        series = collector.latency.get((endpoint, verb))
        if series is None:
            series = collector.latency[(endpoint, verb)] = _Latency()
        series.counts[bisect_left(_BUCKETS, seconds)] += 1
        series.sum += seconds

    @property
    def in_flight(self) -> int:
        return self._requests.in_flight

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
