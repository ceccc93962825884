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

-- Full-text matching under row-level security: ts_match_vq (@@) is not LEAKPROOF, so PostgreSQL
-- will not use it as a GIN index condition on a table with RLS and falls back to scanning every
-- chunk of the tenant. This function runs as its owner and applies the tenant predicate itself
-- (the same expression as the policy), so it can use the GIN index; it returns only ids and
-- scores of the calling transaction's tenant. When the owner is itself subject to RLS (a managed
-- server without BYPASSRLS for it) the policy still applies inside and the result is the same,
-- only slower. Candidates are the repository's chunks; the caller joins them to the snapshot's
-- files (blobs of an older kept snapshot drop out there, so it asks for a few more than it shows).
CREATE FUNCTION palimpsest_lexical_candidates(
    p_repository uuid, p_snapshot uuid, p_query tsquery, p_ident text, p_candidates integer, p_limit integer
) RETURNS TABLE (blob_sha text, ordinal integer, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    WITH cand AS (
        SELECT c.blob_sha, c.ordinal, c.kind, c.name, c.lexical
        FROM code_chunks c
        WHERE c.tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
          AND c.repository_id = p_repository
          AND c.lexical @@ p_query
        LIMIT p_candidates
    )
    SELECT cand.blob_sha, cand.ordinal,
           (ts_rank_cd(cand.lexical, p_query, 32)
            + CASE WHEN p_ident IS NOT NULL AND lower(cand.name) = p_ident THEN 1.0 ELSE 0 END
            + CASE WHEN cand.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
    FROM cand
    ORDER BY score DESC
    LIMIT p_limit
$$;
REVOKE ALL ON FUNCTION palimpsest_lexical_candidates(uuid, uuid, tsquery, text, integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_lexical_candidates(uuid, uuid, tsquery, text, integer, integer)
    IS 'app-callable: GIN-backed lexical candidates of the current tenant (see migration 0004).';

-- Fresh statistics after a bulk load, so the rest of the build (and the first searches) get hash
-- joins instead of nested loops over "1 row" estimates. ANALYZE needs the owner (or MAINTAIN).
CREATE FUNCTION palimpsest_analyze_code_index() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    ANALYZE code_index_files;
    ANALYZE code_blobs;
    ANALYZE code_chunks;
    ANALYZE code_symbols;
    ANALYZE code_facts;
END $$;
REVOKE ALL ON FUNCTION palimpsest_analyze_code_index() FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_analyze_code_index()
    IS 'app-callable: refresh planner statistics of the code index after a bulk load.';

-- A build inserts its chunks with a large GIN pending list (set per transaction) and merges the
-- list once at the end, which is far cheaper than updating the index entry by entry; merging
-- needs the owner, hence this function.
CREATE FUNCTION palimpsest_merge_lexical_index() RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT gin_clean_pending_list('code_chunks_lexical'::regclass)
$$;
REVOKE ALL ON FUNCTION palimpsest_merge_lexical_index() FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_merge_lexical_index()
    IS 'app-callable: merge the lexical GIN pending list after a bulk load.';
