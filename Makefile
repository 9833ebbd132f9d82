# PushTrack: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
PORT ?= 8080

.PHONY: run run-cluster test build release deps bench bench-ingest bench-statements bench-reports bench-cost-curve bench-accuracy bench-overload bench-slow bench-slowloris fuzz screenshots format clean-data

run: deps          ## install what is missing, start a private PostgreSQL, migrate, serve on $(PORT)
	PORT=$(PORT) scripts/run.sh

run-cluster: deps  ## the production shape: PostgreSQL, COLLECTORS (2) collectors, HAProxy with TLS on TLS_PORT (8443)
	scripts/run-cluster.sh

test: deps         ## throwaway PostgreSQL, swift build, swift test; the cluster is stopped even on failure
	scripts/test.sh

build: deps
	swift build

release: deps
	swift build -c release

deps:
	scripts/deps.sh

bench:             ## ingestion, report latency and a 1,000,000-report accuracy run; one summary table (loadtest/README.md)
	loadtest/bench_all.sh

bench-ingest:      ## the ingestion benchmark alone
	loadtest/bench.sh

bench-statements:  ## where ingestion's CPU goes: PostgreSQL per statement and backend, the collector per thread (BATCH=1)
	loadtest/statement_cpu.sh

bench-reports:     ## the report benchmark: a campaign of 1,000,000 deliveries (README.md, Reports)
	loadtest/report_bench.sh

bench-cost-curve:  ## ingestion with 20 M reports stored against an empty database, and the report at 10 M deliveries
	loadtest/cost_curve.sh

bench-accuracy:    ## pushtrack-sim: REPORTS (1,000,000) simulated reports through two collectors behind HAProxy, checked
	loadtest/accuracy.sh

bench-overload:    ## offered load far above capacity: 503 with Retry-After, peak RSS, recovery
	loadtest/overload.sh

bench-slow:        ## 1,000 idle and trickling connections beside normal traffic: p99 latency
	loadtest/slow_clients.sh

bench-slowloris:   ## slowhttptest's 10,000 trickling-header connections against HAProxy and a bare collector
	loadtest/slowloris.sh

fuzz:              ## fuzz the request decoder with libFuzzer for FUZZ_SECONDS (60)
	scripts/fuzz.sh $(or $(FUZZ_SECONDS),60)

screenshots:       ## the dashboard in headless chromium, laptop and phone, into .data/screenshots/
	scripts/dashboard-screenshots.sh

format:
	swift format -i -r Sources Tests loadtest Package.swift

clean-data:        ## stop and delete the private development cluster under .data/
	scripts/pg.sh stop .data/pg || true
	rm -rf .data
