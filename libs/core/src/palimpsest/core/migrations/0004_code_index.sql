-- The persistent code index (ADR-0017): snapshots per default-branch commit, content addressed by
-- git blob SHA, so an incremental build reads, parses and chunks only blobs it has not seen.
--
-- code_blobs   per repository and blob: language, size, analysis version, skip reason
-- code_chunks  per blob: definition chunks or windows, with a lexical tsvector (GIN)
-- code_symbols per blob: definitions (name, kind, span)
-- code_facts   per blob: graph facts (references, calls, imports, governs, ...) — edges are resolved
--              per snapshot because a reference resolves against the whole tree
-- code_index_snapshots / code_index_files: which blob each path of a commit points at
--
-- Every table is a tenant table under forced RLS; deleting a repository cascades through all of it.

ALTER TABLE repositories ADD COLUMN IF NOT EXISTS index_updated_at timestamptz;

CREATE TABLE code_index_snapshots (
    tenant_id         uuid NOT NULL,
    repository_id     uuid NOT NULL,
    snapshot_id       uuid NOT NULL,
    commit_sha        text NOT NULL,
    request_id        uuid,
    state             text NOT NULL DEFAULT 'building'
                      CHECK (state IN ('building', 'ready', 'superseded', 'failed')),
    reason            text,
    files             integer NOT NULL DEFAULT 0,
    chunks            integer NOT NULL DEFAULT 0,
    symbols           integer NOT NULL DEFAULT 0,
    bytes             bigint NOT NULL DEFAULT 0,
    parsed_blobs      integer NOT NULL DEFAULT 0,
    skipped           jsonb NOT NULL DEFAULT '{}'::jsonb,
    duration_s        real,
    embedding_state   text NOT NULL DEFAULT 'none',
    embedding_reason  text,
    embedding_model   text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    ready_at          timestamptz,
    PRIMARY KEY (tenant_id, snapshot_id),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
CREATE INDEX code_index_snapshots_repo ON code_index_snapshots (tenant_id, repository_id, created_at DESC);

CREATE TABLE code_index_files (
    tenant_id     uuid NOT NULL,
    snapshot_id   uuid NOT NULL,
    path          text NOT NULL,
    blob_sha      text NOT NULL,
    language      text,
    kind          text NOT NULL DEFAULT 'code' CHECK (kind IN ('code', 'doc')),
    size          integer NOT NULL DEFAULT 0,
    skip_reason   text,
    PRIMARY KEY (tenant_id, snapshot_id, path),
    FOREIGN KEY (tenant_id, snapshot_id) REFERENCES code_index_snapshots (tenant_id, snapshot_id) ON DELETE CASCADE
);
CREATE INDEX code_index_files_blob ON code_index_files (tenant_id, snapshot_id, blob_sha);

CREATE TABLE code_blobs (
    tenant_id         uuid NOT NULL,
    repository_id     uuid NOT NULL,
    blob_sha          text NOT NULL,
    language          text,
    size              integer NOT NULL DEFAULT 0,
    analysis_version  integer NOT NULL DEFAULT 0,
    skip_reason       text,
    parse_errors      integer NOT NULL DEFAULT 0,
    chunk_count       integer NOT NULL DEFAULT 0,
    symbol_count      integer NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, repository_id, blob_sha),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);

CREATE TABLE code_chunks (
    tenant_id      uuid NOT NULL,
    repository_id  uuid NOT NULL,
    blob_sha       text NOT NULL,
    ordinal        integer NOT NULL,
    kind           text NOT NULL DEFAULT 'window',
    name           text,
    start_line     integer NOT NULL DEFAULT 1,
    end_line       integer NOT NULL DEFAULT 1,
    content        text NOT NULL DEFAULT '',
    lexical        tsvector NOT NULL DEFAULT ''::tsvector,
    PRIMARY KEY (tenant_id, repository_id, blob_sha, ordinal),
    FOREIGN KEY (tenant_id, repository_id, blob_sha)
        REFERENCES code_blobs (tenant_id, repository_id, blob_sha) ON DELETE CASCADE
);
CREATE INDEX code_chunks_lexical ON code_chunks USING gin (lexical);

CREATE TABLE code_symbols (
    tenant_id      uuid NOT NULL,
    repository_id  uuid NOT NULL,
    blob_sha       text NOT NULL,
    ordinal        integer NOT NULL,
    name           text NOT NULL,
    kind           text NOT NULL,
    start_line     integer NOT NULL,
    end_line       integer NOT NULL,
    parent         text,
    PRIMARY KEY (tenant_id, repository_id, blob_sha, ordinal),
    FOREIGN KEY (tenant_id, repository_id, blob_sha)
        REFERENCES code_blobs (tenant_id, repository_id, blob_sha) ON DELETE CASCADE
);
CREATE INDEX code_symbols_name ON code_symbols (tenant_id, repository_id, name);

CREATE TABLE code_facts (
    tenant_id      uuid NOT NULL,
    repository_id  uuid NOT NULL,
    blob_sha       text NOT NULL,
    ordinal        integer NOT NULL,
    kind           text NOT NULL,
    name           text NOT NULL,
    line           integer NOT NULL DEFAULT 0,
    target         text,
    detail         text,
    PRIMARY KEY (tenant_id, repository_id, blob_sha, ordinal),
    FOREIGN KEY (tenant_id, repository_id, blob_sha)
        REFERENCES code_blobs (tenant_id, repository_id, blob_sha) ON DELETE CASCADE
);

SELECT palimpsest_tenant_table('code_index_snapshots');
SELECT palimpsest_tenant_table('code_index_files');
SELECT palimpsest_tenant_table('code_blobs');
SELECT palimpsest_tenant_table('code_chunks');
SELECT palimpsest_tenant_table('code_symbols');
SELECT palimpsest_tenant_table('code_facts');
