-- The maintenance backfill's ticks (issue 19): one row per (job, tick). A replica runs a tick
-- only if its INSERT created the row, so with several ingest replicas each tick runs once.

CREATE TABLE maintenance_ticks (
    job          text NOT NULL CHECK (length(job) BETWEEN 1 AND 100),
    tick_at      timestamptz NOT NULL,
    claimed_by   text NOT NULL DEFAULT '' CHECK (length(claimed_by) <= 200),
    claimed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at  timestamptz,
    requested    integer,
    PRIMARY KEY (job, tick_at)
);
COMMENT ON TABLE maintenance_ticks IS 'infrastructure: which replica claimed each tick of a maintenance job (ids and times only); a tick runs where its row was inserted.';
