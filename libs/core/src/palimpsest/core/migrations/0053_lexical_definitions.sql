-- Lexical search (issue 55): the chunk that defines the identifier searched is always a candidate.
--
-- A query that is one identifier ranks its definition first (a chunk of that name scores 1 more,
-- 0004), but only among the ranked pool: at most p_candidates GIN matches, read in storage order.
-- Where the identifier is named in more chunks than that, its definition was ranked only when the
-- storage order happened to put it among the first; on kafka "KafkaProducer" is said in thousands
-- of chunks. palimpsest_lexical_definitions returns the chunks named as the identifier in the
-- blobs whose symbols define it (the symbol-name GIN index of 0015, case as written), that hold
-- the query and pass the same filters as the candidates, scored exactly as the candidate
-- functions score them, so that lexical search adds them to either pool (a UNION: a definition
-- already in the pool comes back once). It runs as its owner and applies the tenant predicate
-- itself, as 0004 explains; p_prefix is a LIKE pattern (the caller escapes it).
CREATE FUNCTION palimpsest_lexical_definitions(
    p_repository uuid, p_snapshot uuid, p_query tsquery, p_symbol text, p_limit integer,
    p_language text DEFAULT NULL, p_prefix text DEFAULT NULL, p_kind text DEFAULT NULL
) RETURNS TABLE (blob_sha text, ordinal integer, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 5 AS $$
    SELECT c.blob_sha, c.ordinal,
           (ts_rank_cd(c.lexical, p_query, 32)
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
REVOKE ALL ON FUNCTION palimpsest_lexical_definitions(uuid, uuid, tsquery, text, integer, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_lexical_definitions(uuid, uuid, tsquery, text, integer, text, text, text)
    IS 'app-callable: the current tenant''s chunks that define the identifier searched, scored as lexical candidates (migration 0053).';
