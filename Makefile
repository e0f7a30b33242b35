# make test is the one test command; .ci/run calls it and nothing else.
GO ?= go

.PHONY: test test-go test-ha test-faults test-restore test-android apk test-console test-schemathesis test-generated-clients lint-openapi lint-go vet generate run bench postgres

test: postgres lint-openapi vet lint-go test-go test-faults test-restore test-schemathesis test-generated-clients test-android test-console

# PostgreSQL binaries for the Go tests and the private cluster, and pg_auto_failover for the
# failover test (apt-get as root when missing).
postgres:
	bash scripts/ensure-postgres.sh
	bash scripts/ha/ensure-auto-failover.sh

lint-openapi:
	bash scripts/lint-openapi.sh

vet:
	$(GO) vet ./...

# golangci-lint, pinned in the script and installed into .tools/bin when missing (see .golangci.yaml).
lint-go:
	bash scripts/lint-go.sh

# RPSD_TEST_HA=1: the failover test fails, rather than skips, without pg_auto_failover.
test-go:
	RPSD_TEST_HA=1 $(GO) test -count=1 ./...

# Past one machine alone (also part of test-go): three replicas on one database, and a
# PostgreSQL failover mid-game on a pg_auto_failover formation (scripts/ha/formation.sh), with
# their figures.
test-ha: postgres
	RPSD_TEST_HA=1 $(GO) test -count=1 -v -run 'TestThreeReplicas|TestTokenChangesReachEveryReplica|TestRateLimitsArePerReplica|TestFailover' ./cmd/rpsd/

# Proven under faults (README, "Proven under faults"): rpsd replicas through Toxiproxy proxies and
# on a pg_auto_failover formation while a seeded nemesis kills, pauses, slows down, resets, stalls
# and cuts them off and kills the database's primary; every client operation is recorded and the
# history checked (each lobby linearizable against the tournament's model, every acknowledged
# action logged, chains, money, outage rule). Bounded here (under 3 minutes); a long run:
# make test-faults RPSD_FAULTS_DURATION=20m [RPSD_FAULTS_SEED=n].
test-faults: postgres
	RPSD_FAULTS=1 RPSD_TEST_HA=1 RPSD_FAULTS_DURATION=$(RPSD_FAULTS_DURATION) RPSD_FAULTS_SEED=$(RPSD_FAULTS_SEED) \
		$(GO) test -count=1 -v -timeout 90m -run '^TestFaults' ./internal/faulttest/

# The restore drill (README, "Backups and restores"): rpsd on its private cluster with synchronous
# backups (pgBackRest, installed when missing) loses its database's disk mid-play, is restored with
# the runbook's commands and plays on; every acknowledged action is checked to be there, then a
# restore to before the newest published checkpoint is refused. Bounded (under 3 minutes).
test-restore: postgres
	bash scripts/ensure-pgbackrest.sh
	RPSD_TEST_RESTORE=1 $(GO) test -count=1 -v -timeout 10m -run 'TestRestoreDrill|TestSyncBackupLosesNothing|TestArchivedCommitsAreRestored' \
		./internal/restoretest/ ./internal/pgcluster/

# The Kotlin client: generated from openapi.yaml, unit tests, the app's screens driven and
# photographed (Robolectric), end to end against a real rpsd, the APK built and checked.
test-android:
	bash scripts/test-android.sh

# The web console: its hashing against the vectors, its vendored libraries against package-lock.json,
# and the browser tests (Debian's chromium, installed when missing) against a real rpsd.
test-console: postgres
	bash scripts/test-console.sh

# The installable app: android-client/app/target/rps.apk, signed with a local debug key.
apk:
	bash scripts/build-apk.sh

# Schemathesis (pinned in scripts/schemathesis-requirements.txt, in a venv under .tools/) fuzzes a
# real rpsd against openapi.yaml with every check on (about half a minute; 0 failures expected).
test-schemathesis: postgres
	bash scripts/test-schemathesis.sh

# Clients generated from openapi.yaml as a third party would (openapi-python-client and
# openapi-generator's typescript-fetch, pinned, under .tools/), each playing and verifying whole
# games against a real rpsd; a generator warning README does not explain fails it.
test-generated-clients: postgres
	bash scripts/test-generated-clients.sh

generate:
	$(GO) generate ./...

# Serve the API on :8080 with a private PostgreSQL cluster under ./.rpsd (see README); PostgreSQL's
# binaries (and pgBackRest when RPSD_BACKUP_REPO asks for backups) are installed when missing.
run:
	bash scripts/ensure-postgres.sh
	$(if $(RPSD_BACKUP_REPO),bash scripts/ensure-pgbackrest.sh)
	$(GO) run ./cmd/rpsd

# Benchmark against a private PostgreSQL and rpsd built from this tree; writes bench/RESULTS.md
# (about 16 minutes). It reports the goals and never fails on a missed one.
bench: postgres
	$(GO) run ./bench
