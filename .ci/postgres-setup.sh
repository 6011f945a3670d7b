#!/usr/bin/env bash
# PostgreSQL for the state-store-postgres suites: Debian's server on
# 127.0.0.1:5432, a test role and database (the URL the tests default to).
# Idempotent: starts the cluster only when it is down, creates only what is missing.
set -euo pipefail
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
version=$(ls /etc/postgresql | sort -n | tail -1)
if ! pg_ctlcluster "$version" main status >/dev/null 2>&1; then
  pg_ctlcluster "$version" main start
fi
for _ in $(seq 1 30); do
  su postgres -c "pg_isready -q -h 127.0.0.1" && break
  sleep 1
done
psql_admin() { su postgres -c "psql -qtAX -c \"$1\""; }
[ "$(psql_admin "SELECT 1 FROM pg_roles WHERE rolname = 'agent_computer'")" = "1" ] ||
  psql_admin "CREATE ROLE agent_computer LOGIN PASSWORD 'agent_computer'"
# Test files run side by side, each vitest worker in a database of its own
# (workerDatabaseUrl in packages/state-store-postgres/test/test-database.ts).
psql_admin "ALTER ROLE agent_computer CREATEDB"
[ "$(psql_admin "SELECT 1 FROM pg_database WHERE datname = 'agent_computer_test'")" = "1" ] ||
  su postgres -c "createdb -O agent_computer agent_computer_test"
echo "PostgreSQL $version ready on 127.0.0.1:5432 (database agent_computer_test)"

# A second cluster on 5433 that the restart test may stop and start without
# disturbing the suites that share the main one.
if ! pg_lsclusters -h | awk '{print $2}' | grep -qx faults; then
  pg_createcluster "$version" faults -p 5433 >/dev/null
fi
if ! pg_ctlcluster "$version" faults status >/dev/null 2>&1; then
  pg_ctlcluster "$version" faults start
fi
for _ in $(seq 1 30); do
  su postgres -c "pg_isready -q -h 127.0.0.1 -p 5433" && break
  sleep 1
done
psql_faults() { su postgres -c "psql -p 5433 -qtAX -c \"$1\""; }
[ "$(psql_faults "SELECT 1 FROM pg_roles WHERE rolname = 'agent_computer'")" = "1" ] ||
  psql_faults "CREATE ROLE agent_computer LOGIN PASSWORD 'agent_computer'"
[ "$(psql_faults "SELECT 1 FROM pg_database WHERE datname = 'agent_computer_test'")" = "1" ] ||
  su postgres -c "createdb -p 5433 -O agent_computer agent_computer_test"
echo "PostgreSQL $version fault-test cluster ready on 127.0.0.1:5433"
