-- Lexical search (issue 41): candidates that pass a search's filters, and vectors kept in the row.
--
-- Candidates that pass the filters. palimpsest_lexical_candidates (0004)
-- ranks at most p_candidates GIN matches and returns the best p_limit; lexical search filtered by
-- language, path prefix or kind only afterwards, over a pool of 200, so a language or folder with
-- few of the best-ranked chunks came back with a few hits or none: on kafka, bench search's
-- language-filtered words found 0.46 of ripgrep's files in the same language. This variant applies
-- the filters to the candidates themselves (the chunk's kind; its blob at a path of the snapshot
-- with that language and prefix) before the limit. It runs as its owner and applies the tenant
-- predicate itself, as 0004 explains. p_prefix is a LIKE pattern (the caller escapes it). Filtering
-- reads every GIN match up to the limit, so it reads at most ten times p_candidates of them (a
-- word in most of moby's 159 000 chunks took 0.7 s and more without that bound); lexical search asks
-- for this only when the ranked pool's filtered hits fall short.
CREATE FUNCTION palimpsest_lexical_filtered_candidates(
    p_repository uuid, p_snapshot uuid, p_query tsquery, p_ident text, p_candidates integer, p_limit integer,
    p_language text, p_prefix text, p_kind text
) RETURNS TABLE (blob_sha text, ordinal integer, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 50 AS $$
    WITH matched AS (
        SELECT c.tenant_id, c.blob_sha, c.ordinal, c.kind, c.name, c.lexical
        FROM code_chunks c
        WHERE c.tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
          AND c.repository_id = p_repository
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
    ORDER BY score DESC
    LIMIT p_limit
$$;
REVOKE ALL ON FUNCTION palimpsest_lexical_filtered_candidates(uuid, uuid, tsquery, text, integer, integer, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_lexical_filtered_candidates(uuid, uuid, tsquery, text, integer, integer, text, text, text)
    IS 'app-callable: GIN-backed lexical candidates of the current tenant that pass the filters (migration 0041).';

-- Lexical vectors stay in the chunk's row (compressed there), and contents go out of line first.
-- Every search ranks up to 2000 candidates with ts_rank_cd, which reads each candidate's whole
-- vector; under the default EXTENDED storage the toaster moved the larger vectors of real code out
-- of line: 44 % of kafka's chunks (23 534 of 53 681) had theirs in the TOAST table, and ranking a
-- common word read 7 000 buffers. A chunk's content is read only for the ten hits returned.
-- Measured on copies of kafka's chunks, interleaved, same run: ranking a common word 7 004 -> 1 402
-- buffers, p50 35.6 -> 21.3 ms, p95 76.6 -> 41.4 ms (load ~6 on 2 cores), identifiers unchanged;
-- 155 MB either way. Undoing 0039 (a target of 2 032) changed neither (7 082 buffers, p50 37.2 ms).
-- Rows written from now on are stored so; a rebuild rewrites older ones.
ALTER TABLE code_chunks ALTER COLUMN lexical SET STORAGE MAIN;
