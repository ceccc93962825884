-- Recency: when each file of a repository last changed, which files change together, and the
-- outcome of the last scan — written by the recency-scanner, read through palimpsest.index.recency.
--
-- file_recency   per repository and path: the last commit that changed it and that commit's date
--                (NULL = age unknown: a push without a date, never now())
-- cochange       per repository and pair of current paths (path_a < path_b in byte order): how
--                many commits changed both and when the last one did; bounded by the scanner
-- recency_scans  one row per repository: the last scan's status (ok | failed | disabled), reason
--
-- Paths use the "C" collation: byte order, the same order Python's str comparison gives, so the
-- scanner's (a, b) pairs satisfy path_a < path_b here too. All three are tenant tables under
-- forced RLS; deleting a repository cascades through them.

CREATE TABLE file_recency (
    tenant_id         uuid NOT NULL,
    repository_id     uuid NOT NULL,
    path              text COLLATE "C" NOT NULL CHECK (length(path) BETWEEN 1 AND 4096),
    last_commit       text CHECK (last_commit ~ '^[0-9a-f]{40}([0-9a-f]{24})?$'),
    last_modified_at  timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, repository_id, path),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);

CREATE TABLE cochange (
    tenant_id      uuid NOT NULL,
    repository_id  uuid NOT NULL,
    path_a         text COLLATE "C" NOT NULL CHECK (length(path_a) BETWEEN 1 AND 4096),
    path_b         text COLLATE "C" NOT NULL CHECK (length(path_b) BETWEEN 1 AND 4096),
    count          integer NOT NULL DEFAULT 1 CHECK (count > 0),
    last_at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, repository_id, path_a, path_b),
    CONSTRAINT cochange_ordered CHECK (path_a < path_b),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
-- neighbours of a path are found from either side of the pair
CREATE INDEX cochange_path_b ON cochange (tenant_id, repository_id, path_b);

CREATE TABLE recency_scans (
    tenant_id          uuid NOT NULL,
    repository_id      uuid NOT NULL,
    status             text NOT NULL CHECK (status IN ('ok', 'failed', 'disabled')),
    mode               text NOT NULL DEFAULT 'full' CHECK (mode IN ('full', 'incremental', 'none')),
    reason             text CHECK (length(reason) <= 100),
    detail             text CHECK (length(detail) <= 1000),
    commit_sha         text CHECK (commit_sha ~ '^[0-9a-f]{40}([0-9a-f]{24})?$'),
    request_id         uuid,
    files              integer NOT NULL DEFAULT 0 CHECK (files >= 0),
    pairs              integer NOT NULL DEFAULT 0 CHECK (pairs >= 0),
    commits            integer NOT NULL DEFAULT 0 CHECK (commits >= 0),
    stats              jsonb NOT NULL DEFAULT '{}'::jsonb,
    duration_s         double precision NOT NULL DEFAULT 0 CHECK (duration_s >= 0),
    scanned_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, repository_id),
    CONSTRAINT recency_scans_failed_has_reason CHECK (status <> 'failed' OR reason IS NOT NULL),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);

SELECT palimpsest_tenant_table('file_recency');
SELECT palimpsest_tenant_table('cochange');
SELECT palimpsest_tenant_table('recency_scans');
