#!/bin/sh
# Builds bench/otelcol/otelcol-vcenter: contrib v0.130.0 (the newest the module proxy here serves).
# Five of its modules are missing from sum.golang.org; their hashes are the ones pinned in go.sum
# (committed), so the checksum database is skipped for those five only, never for the rest.
set -eu
cd "$(dirname "$0")"
export GOFLAGS=-mod=mod
export GONOSUMDB="github.com/open-telemetry/opentelemetry-collector-contrib/receiver/vcenterreceiver,github.com/open-telemetry/opentelemetry-collector-contrib/extension/encoding/otlpencodingextension,go.opentelemetry.io/collector/filter,go.opentelemetry.io/collector/scraper"
go build -trimpath -o otelcol-vcenter .
