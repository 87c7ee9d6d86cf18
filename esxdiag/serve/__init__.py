"""`esxdiag serve`: watch whole vCenters continuously (README "Watch continuously", docs/serve.md).

    schedule  one thread per vCenter, one cycle per interval, never overlapping (late: skipped, counted)
    cycle     scan -> snapshot -> fleet rules -> deep check within the SSH budget -> proofs kept -> history
    proofs    a proven ring exhaustion kept between deep checks while valid (--proof-max-age)
    state     the last good report per vCenter (stale when its last cycle failed), counters, deep checks
    store     the SQLite history in WAL mode, retention, deep checks
    metrics   /metrics: a prometheus_client Collector over the state
    web       /, /vm/..., /deep/..., /healthz, /metrics over HTTP(S); webconfig: TLS and basic auth
    daemon    wiring, signals
"""
