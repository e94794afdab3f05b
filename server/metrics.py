"""Prometheus metrics, one registry per application (tests run many apps in one process)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
PAUSE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.live_tables = Gauge("barajamos_live_tables", "Tables with a match in play", registry=r)
        self.connected_players = Gauge(
            "barajamos_connected_players", "Open player WebSocket connections", registry=r
        )
        self.actions = Counter(
            "barajamos_actions", "Table actions applied", ["variant", "kind"], registry=r
        )
        self._action_counts: dict[tuple[str, str], Counter] = {}
        self.refused_actions = Counter(
            "barajamos_refused_actions", "Table actions refused", ["reason"], registry=r
        )
        self.action_latency = Histogram(
            "barajamos_action_latency_seconds",
            "From an action's arrival to its broadcast (written first)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.automatic_actions = Counter(
            "barajamos_automatic_actions", "Actions the server took at a deadline", registry=r
        )
        self.automatic_lateness = Histogram(
            "barajamos_automatic_action_lateness_seconds",
            "How late after its deadline an automatic action was applied",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.abandonments = Counter(
            "barajamos_abandonments", "Matches ended by abandonment", registry=r
        )
        self.write_batch_size = Histogram(
            "barajamos_write_batch_size",
            "Jobs (table writes) per group commit",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.write_seconds = Histogram(
            "barajamos_write_seconds",
            "Time a group commit took, from its first statement to its commit",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.write_failures = Counter(
            "barajamos_write_failures",
            "Group commit jobs not confirmed: `refused` (surely not written) or `in_doubt` (the"
            " connection broke during the commit; their tables re-read what was written)",
            ["outcome"],
            registry=r,
        )
        for outcome in ("refused", "in_doubt"):  # exported at 0 from the start, for alerts
            self.write_failures.labels(outcome)
        self.table_reloads = Counter(
            "barajamos_table_reloads", "Tables that re-read what was written after a write in"
            " doubt", registry=r
        )
        self.serving_lock = Gauge(
            "barajamos_serving_lock_held", "1 while this house holds its database's serving"
            " lock (0: lost; it is taken again, or the house stops for the one that took it)",
            registry=r,
        )
        self.tables_unavailable = Counter(
            "barajamos_tables_unavailable", "Tables taken out of service because what was"
            " written does not rebuild (`not_restored` at start, e.g. a seed key that does not"
            " open their sealed seeds; `not_reloaded` after a write in doubt): each needs an"
            " operator", ["when"], registry=r,
        )
        for when in ("not_restored", "not_reloaded"):  # exported at 0 from the start
            self.tables_unavailable.labels(when)
        self.table_stalls = Counter(
            "barajamos_table_stalls", "Times a table in play found no clock to move it on (a"
            " write failed) and will try again later", registry=r,
        )
        self.idle_tables_closed = Counter(
            "barajamos_idle_tables_closed", "Open or finished tables closed because nobody had"
            " them open for BARAJAMOS_IDLE_TABLE_MINUTES", registry=r
        )
        self.http_requests = Counter(
            "barajamos_http_requests", "HTTP requests", ["route", "status"], registry=r
        )
        self.gc_seconds = Histogram(
            "barajamos_gc_seconds", "Garbage collections (`server.loops.Collector`): the whole"
            " process waits for each; kind: young (what was made since the last one) or whole",
            ["kind"], buckets=PAUSE_BUCKETS, registry=r,
        )

    def count_action(self, variant: str, kind: str) -> None:
        """One more applied action. The labelled child is kept: `labels()` takes a lock and
        checks its arguments at every call, and this runs at every action (at most 3 variants x
        the action kinds)."""
        child = self._action_counts.get((variant, kind))
        if child is None:
            child = self._action_counts[(variant, kind)] = self.actions.labels(variant, kind)
        child.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
