-- Lexical candidates of the snapshot searched, not of every blob the repository keeps.
--
-- palimpsest_lexical_candidates (0004) ranked the first p_candidates GIN matches among all the
-- repository's chunks and left it to the caller to drop those whose blob is not at a path of the
-- snapshot. A repository keeps the blobs of up to five trees (two branch snapshots, three pinned
-- review bases), so where a word matched more than p_candidates chunks the pool held older
-- versions of the same files in place of the snapshot's own, and the unfiltered search, the
-- review's similar-code source and its mentions source came back with fewer hits, which ones
-- depending on which other snapshots happened to be kept: replaying the same sixteen changes of
-- colinhacks/zod twice gave five different contexts. Now the candidates are the matches whose blob
-- is at a path of the snapshot, reading at most five times p_candidates GIN matches (one share per
-- kept tree), as the filtered variant's 'ranked' plan does (0041), and equal scores are ordered
-- by blob and chunk so the same candidates always give the same list.
CREATE OR REPLACE FUNCTION palimpsest_lexical_candidates(
    p_repository uuid, p_snapshot uuid, p_query tsquery, p_ident text, p_candidates integer, p_limit integer
) RETURNS TABLE (blob_sha text, ordinal integer, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 50 AS $$
    WITH matched AS (
        SELECT c.tenant_id, c.blob_sha, c.ordinal, c.kind, c.name, c.lexical
        FROM code_chunks c
        WHERE c.tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
          AND c.repository_id = p_repository
          AND c.lexical @@ p_query
        LIMIT p_candidates * 5
    ), cand AS (
        SELECT m.blob_sha, m.ordinal, m.kind, m.name, m.lexical
        FROM matched m
        WHERE EXISTS (SELECT 1 FROM code_index_files f
                      WHERE f.tenant_id = m.tenant_id AND f.snapshot_id = p_snapshot
                        AND f.blob_sha = m.blob_sha)
        LIMIT p_candidates
    )
    SELECT cand.blob_sha, cand.ordinal,
           (ts_rank_cd(cand.lexical, p_query, 32)
            + CASE WHEN p_ident IS NOT NULL AND lower(cand.name) = p_ident THEN 1.0 ELSE 0 END
            + CASE WHEN cand.kind NOT IN ('window', 'section') THEN 0.05 ELSE 0 END)::real AS score
    FROM cand
    ORDER BY score DESC, cand.blob_sha, cand.ordinal
    LIMIT p_limit
$$;
