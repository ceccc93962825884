-- Lexical search (issue 55): a static prior in every chunk row, and ranking that uses it.
--
-- Code search engines rank the definition of the term first, then product code over tests,
-- vendored and generated files, then term statistics. The candidates were ranked by ts_rank_cd
-- alone (plus 1 for the chunk that defines the identifier searched and 0.05 for any definition
-- chunk), so a test, a vendored copy or a generated file that said the word as often as the
-- product's code ranked beside it, in storage order.
--
-- code_chunks.prior is the chunk's static weight, 0 < prior <= 1, written by the chunker from
-- the shared classifier's kind of the path the blob was analysed at
-- (palimpsest.index.ranking.file_prior: product code 1, tests 0.6, vendored and generated 0.4 ...).
-- It is a property of the blob's path, stored per chunk so that ranking reads it from the row it
-- already reads for the text (no more rows, no more buffers: it sits in the heap tuple beside
-- name and kind, not in the TOASTed vector). A blob at several paths keeps the prior of the path
-- it was first analysed at. Rows written before this migration keep the neutral default 1 (they
-- rank as before) until the chunker, whose analysis version moves with this change, rewrites them.
--
-- The three candidate functions score a chunk as
--     ts_rank_cd(lexical, query, 32) * prior            text statistics, weighted by the prior
--   + 1.0 where the chunk is named as the identifier searched (0004, 0053)
--   + 0.05 where the chunk is a definition rather than a window or a section
-- so the identifier's definition still ranks first (ts_rank_cd with normalisation 32 is below 1),
-- and among equal text scores product code ranks above tests, examples, generated and vendored
-- files. The pool is drawn as before (the same rows, the same limits); only its order changes.
ALTER TABLE code_chunks ADD COLUMN prior real NOT NULL DEFAULT 1
    CHECK (prior > 0 AND prior <= 1);

CREATE OR REPLACE FUNCTION palimpsest_lexical_candidates(
    p_repository uuid, p_snapshot uuid, p_query tsquery, p_ident text, p_candidates integer, p_limit integer
) RETURNS TABLE (blob_sha text, ordinal integer, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 50 AS $$
    WITH matched AS (
        SELECT c.tenant_id, c.blob_sha, c.ordinal, c.kind, c.name, c.lexical, c.prior
        FROM code_chunks c
        WHERE c.tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
          AND c.repository_id = p_repository
          AND c.lexical @@ p_query
        LIMIT p_candidates * 5
    ), cand AS (
        SELECT m.blob_sha, m.ordinal, m.kind, m.name, m.lexical, m.prior
        FROM matched m
        WHERE EXISTS (SELECT 1 FROM code_index_files f
                      WHERE f.tenant_id = m.tenant_id AND f.snapshot_id = p_snapshot
                        AND f.blob_sha = m.blob_sha)
        LIMIT p_candidates
    )
    SELECT cand.blob_sha, cand.ordinal,
           (ts_rank_cd(cand.lexical, p_query, 32) * cand.prior
            + CASE WHEN p_ident IS NOT NULL AND lower(cand.name) = p_ident THEN 1.0 ELSE 0 END
            + CASE WHEN cand.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
    FROM cand
    ORDER BY score DESC, cand.blob_sha, cand.ordinal
    LIMIT p_limit
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
        WITH matched AS (
            SELECT c.tenant_id, c.blob_sha, c.ordinal, c.kind, c.name, c.lexical, c.prior
            FROM code_chunks c
            WHERE c.tenant_id = v_tenant AND c.repository_id = p_repository
              AND c.lexical @@ p_query
              AND (p_kind IS NULL OR c.kind = p_kind)
            LIMIT p_candidates * 10
        ), cand AS (
            SELECT m.blob_sha, m.ordinal, m.kind, m.name, m.lexical, m.prior
            FROM matched m
            WHERE EXISTS (SELECT 1 FROM code_index_files f
                          WHERE f.tenant_id = m.tenant_id AND f.snapshot_id = p_snapshot
                            AND f.blob_sha = m.blob_sha
                            AND (p_language IS NULL OR f.language = p_language)
                            AND (p_prefix IS NULL OR f.path LIKE p_prefix))
            LIMIT p_candidates
        )
        SELECT cand.blob_sha, cand.ordinal,
               (ts_rank_cd(cand.lexical, p_query, 32) * cand.prior
                + CASE WHEN p_ident IS NOT NULL AND lower(cand.name) = p_ident THEN 1.0 ELSE 0 END
                + CASE WHEN cand.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
        FROM cand
        ORDER BY 3 DESC
        LIMIT p_limit;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION palimpsest_lexical_definitions(
    p_repository uuid, p_snapshot uuid, p_query tsquery, p_symbol text, p_limit integer,
    p_language text DEFAULT NULL, p_prefix text DEFAULT NULL, p_kind text DEFAULT NULL
) RETURNS TABLE (blob_sha text, ordinal integer, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 5 AS $$
    SELECT c.blob_sha, c.ordinal,
           (ts_rank_cd(c.lexical, p_query, 32) * c.prior
            + 1.0
            + CASE WHEN c.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
    FROM code_blobs b
    JOIN code_chunks c ON c.tenant_id = b.tenant_id AND c.repository_id = b.repository_id
                      AND c.blob_sha = b.blob_sha
    WHERE b.tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
      AND b.repository_id = p_repository
      AND palimpsest_symbol_names(b.symbols) && ARRAY[p_symbol]
      AND lower(c.name) = lower(p_symbol)
      AND c.lexical @@ p_query
      AND (p_kind IS NULL OR c.kind = p_kind)
      AND EXISTS (SELECT 1 FROM code_index_files f
                  WHERE f.tenant_id = b.tenant_id AND f.snapshot_id = p_snapshot
                    AND f.blob_sha = b.blob_sha
                    AND (p_language IS NULL OR f.language = p_language)
                    AND (p_prefix IS NULL OR f.path LIKE p_prefix))
    ORDER BY score DESC, c.blob_sha, c.ordinal
    LIMIT p_limit
$$;
