-- Lexical search (issue 55): the candidate pool is drawn in the prior's order, not in storage order.
--
-- A word that thousands of chunks hold (kafka: "final" in 14 777 of 54 161) has more matches than
-- the ranked pool, and the pool was the first matches of the GIN index in storage order: the top 10
-- was the best of an arbitrary sample, as likely tests and vendored copies as the product's code.
--
-- The one GIN index on code_chunks.lexical becomes three partial GIN indexes, one per tier of the
-- static prior (0056, palimpsest.index.ranking.file_prior):
--   tier 1  prior >= 0.95                 product code
--   tier 2  0.65 <= prior < 0.95          docs, configuration, tooling, examples, other files
--   tier 3  prior < 0.65                  tests, changelogs, assets, generated and vendored files
-- Together they hold each row once, so they take the space of the one index they replace (kafka:
-- 31 MB), and every build maintains the same entries. The candidate functions draw the pool tier by
-- tier, best first (UNION ALL under the pool's LIMIT: a later tier's index is not even read once the
-- earlier ones fill the pool), so what a smaller pool cuts is the least likely to be wanted; the
-- pool's size is the caller's (palimpsest.index.search.DEFAULT_CANDIDATES). A rare word's matches
-- all fit in the pool, as before. Within a tier the order is still storage order.
--
-- The bounds sit between the priors ranking.py assigns (1.0, 0.9 / 0.8 / 0.7, 0.6 / 0.5 / 0.4) so no
-- prior is compared at a bound; a test (tests/unit/index/test_ranking.py) keeps it that way. Only these
-- functions search the lexical column, and each condition names its tier's predicate as written in
-- the index, so the planner can use the partial indexes.
DROP INDEX code_chunks_lexical;
CREATE INDEX code_chunks_lexical_product ON code_chunks USING gin (lexical) WHERE prior >= 0.95;
CREATE INDEX code_chunks_lexical_support ON code_chunks USING gin (lexical) WHERE prior >= 0.65 AND prior < 0.95;
CREATE INDEX code_chunks_lexical_rest ON code_chunks USING gin (lexical) WHERE prior < 0.65;

-- A build merges the indexes' GIN pending lists (0015).
CREATE OR REPLACE FUNCTION palimpsest_merge_lexical_index() RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT gin_clean_pending_list('code_chunks_lexical_product'::regclass)
         + gin_clean_pending_list('code_chunks_lexical_support'::regclass)
         + gin_clean_pending_list('code_chunks_lexical_rest'::regclass)
         + gin_clean_pending_list('code_blobs_symbol_names'::regclass)
$$;

-- The matches of p_query among a repository's chunks, tier by tier of the prior, best tier first.
-- Each arm names its tier's predicate as the partial index does, so the planner reads that index;
-- under a LIMIT a later arm is not read once the earlier ones fill it. A plain SQL function so that
-- PostgreSQL inlines it into the candidate functions below (it runs with their rights); called
-- alone it runs under the caller's row-level security like any query.
CREATE FUNCTION palimpsest_lexical_tiers(p_tenant uuid, p_repository uuid, p_query tsquery, p_kind text)
RETURNS TABLE (tenant_id uuid, blob_sha text, ordinal integer, kind text, name text, lexical tsvector, prior real)
LANGUAGE sql STABLE AS $$
    (SELECT c.tenant_id, c.blob_sha, c.ordinal, c.kind, c.name, c.lexical, c.prior FROM code_chunks c
     WHERE c.tenant_id = p_tenant AND c.repository_id = p_repository AND c.lexical @@ p_query
       AND (p_kind IS NULL OR c.kind = p_kind) AND c.prior >= 0.95)
    UNION ALL
    (SELECT c.tenant_id, c.blob_sha, c.ordinal, c.kind, c.name, c.lexical, c.prior FROM code_chunks c
     WHERE c.tenant_id = p_tenant AND c.repository_id = p_repository AND c.lexical @@ p_query
       AND (p_kind IS NULL OR c.kind = p_kind) AND c.prior >= 0.65 AND c.prior < 0.95)
    UNION ALL
    (SELECT c.tenant_id, c.blob_sha, c.ordinal, c.kind, c.name, c.lexical, c.prior FROM code_chunks c
     WHERE c.tenant_id = p_tenant AND c.repository_id = p_repository AND c.lexical @@ p_query
       AND (p_kind IS NULL OR c.kind = p_kind) AND c.prior < 0.65)
$$;

CREATE OR REPLACE FUNCTION palimpsest_lexical_candidates(
    p_repository uuid, p_snapshot uuid, p_query tsquery, p_ident text, p_candidates integer, p_limit integer
) RETURNS TABLE (blob_sha text, ordinal integer, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 50 AS $$
    -- first: the pool (p_candidates matches, best tier first) ranked, then kept where its blob is in
    -- the snapshot best first until p_limit are kept: p_limit probes of
    -- code_index_files, not one per candidate (~4 buffers a probe, most of a common word's cost:
    -- kafka, "final", 13 400 buffers of which 7 400 probes). Where fewer than p_limit are kept (few
    -- matches, or a pool crowded by chunks of the repository's other kept snapshots), the pool is
    -- drawn again from the snapshot's chunks alone (up to five times as many matches read, probing each).
    WITH first AS MATERIALIZED (
        SELECT r.blob_sha, r.ordinal, r.score
        FROM (SELECT m.tenant_id, m.blob_sha, m.ordinal,
                     (ts_rank_cd(m.lexical, p_query, 32) * m.prior
                      + CASE WHEN p_ident IS NOT NULL AND lower(m.name) = p_ident THEN 1.0 ELSE 0 END
                      + CASE WHEN m.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
              FROM (SELECT * FROM palimpsest_lexical_tiers(NULLIF(current_setting('app.tenant_id', true), '')::uuid, p_repository, p_query, NULL)
                    LIMIT p_candidates) m
              ORDER BY score DESC, m.ordinal
              OFFSET 0) r
        WHERE EXISTS (SELECT 1 FROM code_index_files f
                      WHERE f.tenant_id = r.tenant_id AND f.snapshot_id = p_snapshot AND f.blob_sha = r.blob_sha)
        ORDER BY r.score DESC, r.ordinal
        LIMIT p_limit
    ), enough AS (
        SELECT count(*) >= p_limit AS yes FROM first
    )
    SELECT first.blob_sha, first.ordinal, first.score FROM first WHERE (SELECT yes FROM enough)
    UNION ALL
    (SELECT cand.blob_sha, cand.ordinal,
            (ts_rank_cd(cand.lexical, p_query, 32) * cand.prior
             + CASE WHEN p_ident IS NOT NULL AND lower(cand.name) = p_ident THEN 1.0 ELSE 0 END
             + CASE WHEN cand.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
     FROM (SELECT m.* FROM (SELECT * FROM palimpsest_lexical_tiers(NULLIF(current_setting('app.tenant_id', true), '')::uuid, p_repository, p_query, NULL)
                            LIMIT p_candidates * 5) m
           WHERE EXISTS (SELECT 1 FROM code_index_files f
                         WHERE f.tenant_id = m.tenant_id AND f.snapshot_id = p_snapshot AND f.blob_sha = m.blob_sha)
           LIMIT p_candidates) cand
     WHERE NOT (SELECT yes FROM enough)
     ORDER BY 3 DESC, cand.ordinal
     LIMIT p_limit)
$$;

CREATE OR REPLACE FUNCTION palimpsest_lexical_filtered_candidates(
    p_repository uuid, p_snapshot uuid, p_query tsquery, p_ident text, p_candidates integer, p_limit integer,
    p_language text, p_prefix text, p_kind text, p_plan text DEFAULT NULL
) RETURNS TABLE (blob_sha text, ordinal integer, score real)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT ROWS 50 AS $$
#variable_conflict use_column
DECLARE
    v_tenant uuid := NULLIF(current_setting('app.tenant_id', true), '')::uuid;
    v_plan text := p_plan;
    v_matches double precision;
    v_files_est double precision;
    v_per_blob double precision;
    v_explain json;
    -- the blobs at the snapshot's paths that pass the filters, as dynamic SQL so that each call is
    -- planned with its own filters (a cached generic plan cannot use the language index)
    v_files text := 'SELECT DISTINCT f.blob_sha FROM code_index_files f WHERE f.tenant_id = $1 AND f.snapshot_id = $2'
        || CASE WHEN p_language IS NOT NULL THEN ' AND f.language = $3' ELSE '' END
        || CASE WHEN p_prefix IS NOT NULL THEN ' AND f.path LIKE $4' ELSE '' END;
BEGIN
    IF v_plan IS NOT NULL AND v_plan NOT IN ('files', 'ranked') THEN
        RAISE EXCEPTION 'p_plan must be files, ranked or NULL, not %', v_plan USING ERRCODE = '22023';
    END IF;
    IF v_plan IS NULL THEN
        v_plan := 'ranked';
        IF p_language IS NOT NULL OR p_prefix IS NOT NULL THEN
            -- the planner's estimates, no rows read: the query's GIN matches (what 'ranked' reads,
            -- at most ten times p_candidates) against the filter's files times the chunks per blob
            EXECUTE format('EXPLAIN (FORMAT JSON) SELECT 1 FROM code_chunks c'
                           ' WHERE c.repository_id = %L AND c.lexical @@ %L::tsquery', p_repository, p_query)
                INTO v_explain;
            v_matches := (v_explain -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
            EXECUTE format('EXPLAIN (FORMAT JSON) SELECT 1 FROM code_index_files f WHERE f.snapshot_id = %L%s%s',
                           p_snapshot,
                           CASE WHEN p_language IS NOT NULL THEN format(' AND f.language = %L', p_language) ELSE '' END,
                           CASE WHEN p_prefix IS NOT NULL THEN format(' AND f.path LIKE %L', p_prefix) ELSE '' END)
                INTO v_explain;
            v_files_est := (v_explain -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
            SELECT coalesce(max(c.reltuples) FILTER (WHERE c.oid = 'code_chunks'::regclass), 0)
                   / greatest(coalesce(max(c.reltuples) FILTER (WHERE c.oid = 'code_blobs'::regclass), 0), 1)
            INTO v_per_blob FROM pg_class c WHERE c.oid IN ('code_chunks'::regclass, 'code_blobs'::regclass);
            IF v_files_est * greatest(v_per_blob, 1) < least(v_matches, p_candidates * 10.0) THEN
                v_plan := 'files';
            END IF;
        END IF;
    END IF;
    IF v_plan = 'files' THEN
        RETURN QUERY EXECUTE
            'WITH fb AS (' || v_files || '), cand AS ('
            ' SELECT c.blob_sha, c.ordinal, c.kind, c.name, c.lexical, c.prior'
            ' FROM fb JOIN code_chunks c ON c.tenant_id = $1 AND c.repository_id = $6 AND c.blob_sha = fb.blob_sha'
            ' WHERE c.lexical @@ $7 AND ($8::text IS NULL OR c.kind = $8)'
            ' LIMIT $5)'
            ' SELECT cand.blob_sha, cand.ordinal,'
            '  (ts_rank_cd(cand.lexical, $7, 32) * cand.prior'
            '   + CASE WHEN $9::text IS NOT NULL AND lower(cand.name) = $9 THEN 1.0 ELSE 0 END'
            '   + CASE WHEN cand.kind NOT IN (''window'', ''section'') THEN 0.05 ELSE 0 END)::real'
            ' FROM cand ORDER BY 3 DESC LIMIT $10'
            USING v_tenant, p_snapshot, p_language, p_prefix, p_candidates, p_repository, p_query, p_kind, p_ident,
                  p_limit;
    ELSE
        RETURN QUERY
        -- first: the pool (p_candidates matches, best tier first) ranked, then kept where its blob is in
        -- the snapshot, at a path that passes the filters, best first until p_limit are kept: p_limit probes of
        -- code_index_files, not one per candidate (~4 buffers a probe, most of a common word's cost:
        -- kafka, "final", 13 400 buffers of which 7 400 probes). Where fewer than p_limit are kept (few
        -- matches, or a pool crowded by chunks of the repository's other kept snapshots), the pool is
        -- drawn again from the snapshot's chunks alone (up to ten times as many matches read, probing each).
        WITH first AS MATERIALIZED (
            SELECT r.blob_sha, r.ordinal, r.score
            FROM (SELECT m.tenant_id, m.blob_sha, m.ordinal,
                         (ts_rank_cd(m.lexical, p_query, 32) * m.prior
                          + CASE WHEN p_ident IS NOT NULL AND lower(m.name) = p_ident THEN 1.0 ELSE 0 END
                          + CASE WHEN m.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
                  FROM (SELECT * FROM palimpsest_lexical_tiers(v_tenant, p_repository, p_query, p_kind)
                        LIMIT p_candidates) m
                  ORDER BY score DESC, m.ordinal
                  OFFSET 0) r
            WHERE EXISTS (SELECT 1 FROM code_index_files f
                          WHERE f.tenant_id = r.tenant_id AND f.snapshot_id = p_snapshot AND f.blob_sha = r.blob_sha
                           AND (p_language IS NULL OR f.language = p_language)
                           AND (p_prefix IS NULL OR f.path LIKE p_prefix))
            ORDER BY r.score DESC, r.ordinal
            LIMIT p_limit
        ), enough AS (
            SELECT count(*) >= p_limit AS yes FROM first
        )
        SELECT first.blob_sha, first.ordinal, first.score FROM first WHERE (SELECT yes FROM enough)
        UNION ALL
        (SELECT cand.blob_sha, cand.ordinal,
                (ts_rank_cd(cand.lexical, p_query, 32) * cand.prior
                 + CASE WHEN p_ident IS NOT NULL AND lower(cand.name) = p_ident THEN 1.0 ELSE 0 END
                 + CASE WHEN cand.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
         FROM (SELECT m.* FROM (SELECT * FROM palimpsest_lexical_tiers(v_tenant, p_repository, p_query, p_kind)
                                LIMIT p_candidates * 10) m
               WHERE EXISTS (SELECT 1 FROM code_index_files f
                             WHERE f.tenant_id = m.tenant_id AND f.snapshot_id = p_snapshot AND f.blob_sha = m.blob_sha
                              AND (p_language IS NULL OR f.language = p_language)
                              AND (p_prefix IS NULL OR f.path LIKE p_prefix))
               LIMIT p_candidates) cand
         WHERE NOT (SELECT yes FROM enough)
         ORDER BY 3 DESC, cand.ordinal
         LIMIT p_limit);
    END IF;
END $$;

-- The identifier's definitions (0053) start from the blobs that define the name (the symbol-name GIN
-- index), materialized first: the one lexical GIN index gave the planner another way in, and without
-- it a generic plan started from every file of the snapshot and read each blob's symbols (kafka:
-- 26 000 buffers, 120 ms for a name nothing defines).
CREATE OR REPLACE FUNCTION palimpsest_lexical_definitions(
    p_repository uuid, p_snapshot uuid, p_query tsquery, p_symbol text, p_limit integer,
    p_language text DEFAULT NULL, p_prefix text DEFAULT NULL, p_kind text DEFAULT NULL
) RETURNS TABLE (blob_sha text, ordinal integer, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 5 AS $$
    WITH defining AS MATERIALIZED (
        SELECT b.tenant_id, b.repository_id, b.blob_sha
        FROM code_blobs b
        WHERE b.tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
          AND b.repository_id = p_repository
          AND palimpsest_symbol_names(b.symbols) && ARRAY[p_symbol]
    )
    SELECT c.blob_sha, c.ordinal,
           (ts_rank_cd(c.lexical, p_query, 32) * c.prior
            + 1.0
            + CASE WHEN c.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
    FROM defining d
    JOIN code_chunks c ON c.tenant_id = d.tenant_id AND c.repository_id = d.repository_id
                      AND c.blob_sha = d.blob_sha
    WHERE lower(c.name) = lower(p_symbol)
      AND c.lexical @@ p_query
      AND (p_kind IS NULL OR c.kind = p_kind)
      AND EXISTS (SELECT 1 FROM code_index_files f
                  WHERE f.tenant_id = d.tenant_id AND f.snapshot_id = p_snapshot
                    AND f.blob_sha = d.blob_sha
                    AND (p_language IS NULL OR f.language = p_language)
                    AND (p_prefix IS NULL OR f.path LIKE p_prefix))
    ORDER BY score DESC, c.blob_sha, c.ordinal
    LIMIT p_limit
$$;
