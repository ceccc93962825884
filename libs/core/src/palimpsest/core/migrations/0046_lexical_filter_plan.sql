-- Lexical search (issue 41): a filtered search chooses its plan by the filter's size.
--
-- palimpsest_lexical_filtered_candidates (0041) reads the GIN matches of the query, up to ten times
-- p_candidates of them, and keeps those whose blob is at a path of the snapshot that passes the
-- filters. Where the filter holds few chunks and the words are common that reads thousands of rows
-- for a handful of hits: on kafka, "test" in the 270 JSON files read 20 000 matches (6 735 heap
-- blocks, 231 ms) for 4 hits, after lexical search had first ranked 2 000 unfiltered candidates
-- in vain; bench search's language shape had a p95 of 512 ms. Its 'files' plan starts from the
-- other end: the blobs of the files that pass the filters, their chunks through code_chunks_blob,
-- and the query tested on those (270 files, 1 265 buffers, 20 ms on the same query).
--
-- The plan is chosen per call (p_plan NULL) from the planner's estimates, reading no rows:
-- 'files' when the filter's files times the chunks per blob are fewer than the query's expected
-- GIN matches (at most the 'ranked' plan's bound of ten times p_candidates), else 'ranked' (0041's
-- plan, whose EXISTS probes code_index_files_blob per match, cheap where the filter is broad).
-- Counting the filter's chunks instead cost more than it saved where the filter is broad: a
-- folder of the generated corpus's 50 000 files took path-filtered p50 from 15 to 89 ms. p_plan
-- 'files' or 'ranked' forces one (tests compare the two). Both return the same chunks when fewer
-- than p_candidates pass the filters.
CREATE INDEX code_index_files_language ON code_index_files (tenant_id, snapshot_id, language);

DROP FUNCTION palimpsest_lexical_filtered_candidates(uuid, uuid, tsquery, text, integer, integer, text, text, text);
CREATE FUNCTION palimpsest_lexical_filtered_candidates(
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
            ' SELECT c.blob_sha, c.ordinal, c.kind, c.name, c.lexical'
            ' FROM fb JOIN code_chunks c ON c.tenant_id = $1 AND c.repository_id = $6 AND c.blob_sha = fb.blob_sha'
            ' WHERE c.lexical @@ $7 AND ($8::text IS NULL OR c.kind = $8)'
            ' LIMIT $5)'
            ' SELECT cand.blob_sha, cand.ordinal,'
            '  (ts_rank_cd(cand.lexical, $7, 32)'
            '   + CASE WHEN $9::text IS NOT NULL AND lower(cand.name) = $9 THEN 1.0 ELSE 0 END'
            '   + CASE WHEN cand.kind NOT IN (''window'', ''section'') THEN 0.05 ELSE 0 END)::real'
            ' FROM cand ORDER BY 3 DESC LIMIT $10'
            USING v_tenant, p_snapshot, p_language, p_prefix, p_candidates, p_repository, p_query, p_kind, p_ident,
                  p_limit;
    ELSE
        RETURN QUERY
        WITH matched AS (
            SELECT c.tenant_id, c.blob_sha, c.ordinal, c.kind, c.name, c.lexical
            FROM code_chunks c
            WHERE c.tenant_id = v_tenant AND c.repository_id = p_repository
              AND c.lexical @@ p_query
              AND (p_kind IS NULL OR c.kind = p_kind)
            LIMIT p_candidates * 10
        ), cand AS (
            SELECT m.blob_sha, m.ordinal, m.kind, m.name, m.lexical
            FROM matched m
            WHERE EXISTS (SELECT 1 FROM code_index_files f
                          WHERE f.tenant_id = m.tenant_id AND f.snapshot_id = p_snapshot
                            AND f.blob_sha = m.blob_sha
                            AND (p_language IS NULL OR f.language = p_language)
                            AND (p_prefix IS NULL OR f.path LIKE p_prefix))
            LIMIT p_candidates
        )
        SELECT cand.blob_sha, cand.ordinal,
               (ts_rank_cd(cand.lexical, p_query, 32)
                + CASE WHEN p_ident IS NOT NULL AND lower(cand.name) = p_ident THEN 1.0 ELSE 0 END
                + CASE WHEN cand.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
        FROM cand
        ORDER BY 3 DESC
        LIMIT p_limit;
    END IF;
END $$;
REVOKE ALL ON FUNCTION palimpsest_lexical_filtered_candidates(uuid, uuid, tsquery, text, integer, integer, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_lexical_filtered_candidates(uuid, uuid, tsquery, text, integer, integer, text, text, text, text)
    IS 'app-callable: lexical candidates of the current tenant that pass the filters, by the plan that suits the filter''s size (migrations 0041, 0046).';
