-- optional-extension: vector
-- Semantic search when pgvector exists (migrate.py runs this file only if CREATE EXTENSION vector
-- succeeds; without it the embeddings table still works and semantic search reports itself
-- unavailable while lexical search carries on).
--
-- One partial HNSW expression index per supported dimension: `vector` up to 2000 dimensions
-- (384, 768, 1024, 1536) and `halfvec` for 3072 (HNSW indexes `vector` only up to 2000). Other
-- dimensions are refused by the embedder (embedding state `unsupported_dimensions`). Cosine
-- distance, the metric embedding providers normalise for.

CREATE INDEX code_chunk_embeddings_hnsw_384 ON code_chunk_embeddings
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dimension = 384;
CREATE INDEX code_chunk_embeddings_hnsw_768 ON code_chunk_embeddings
    USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE dimension = 768;
CREATE INDEX code_chunk_embeddings_hnsw_1024 ON code_chunk_embeddings
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE dimension = 1024;
CREATE INDEX code_chunk_embeddings_hnsw_1536 ON code_chunk_embeddings
    USING hnsw ((embedding::vector(1536)) vector_cosine_ops) WHERE dimension = 1536;
CREATE INDEX code_chunk_embeddings_hnsw_3072 ON code_chunk_embeddings
    USING hnsw ((embedding::halfvec(3072)) halfvec_cosine_ops) WHERE dimension = 3072;

-- Vector candidates under row-level security. The distance operators (<=>) are not LEAKPROOF, so
-- under RLS PostgreSQL will not use them as an index condition and would compute the distance to
-- every vector of the tenant. This function runs as its owner and applies the tenant predicate
-- itself (the policy's expression), so the ORDER BY … LIMIT can walk the HNSW index of the
-- query's dimension. It only ever compares vectors of the same model (p_model) and dimension, and
-- only chunks of blobs that the snapshot references. Iterative index scans (pgvector ≥ 0.8) keep
-- walking the graph until enough rows pass those filters; results may come slightly out of order,
-- so callers sort by distance. Returns ids and distances only; content is read under the policy.
CREATE FUNCTION palimpsest_semantic_candidates(
    p_repository uuid, p_snapshot uuid, p_model text, p_query real[], p_limit integer
) RETURNS TABLE (blob_sha text, ordinal integer, distance real)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT
SET hnsw.iterative_scan = 'relaxed_order'
AS $$
DECLARE
    dim integer := cardinality(p_query);
    typ text := CASE WHEN cardinality(p_query) IN (384, 768, 1024, 1536) THEN 'vector'
                     WHEN cardinality(p_query) = 3072 THEN 'halfvec' END;
BEGIN
    IF typ IS NULL THEN
        RAISE EXCEPTION 'unsupported embedding dimension %', dim USING ERRCODE = '22023';
    END IF;
    -- dim and typ come from the whitelist above; every value travels as a parameter
    RETURN QUERY EXECUTE format(
        'SELECT e.blob_sha, e.ordinal, (e.embedding::%1$s(%2$s) <=> $4::%1$s(%2$s))::real'
        ' FROM code_chunk_embeddings e'
        ' WHERE e.dimension = %2$s'
        '   AND e.tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid'
        '   AND e.repository_id = $1 AND e.model = $3'
        '   AND EXISTS (SELECT 1 FROM code_index_files f WHERE f.tenant_id = e.tenant_id'
        '               AND f.snapshot_id = $2 AND f.blob_sha = e.blob_sha)'
        ' ORDER BY e.embedding::%1$s(%2$s) <=> $4::%1$s(%2$s)'
        ' LIMIT $5',
        typ, dim)
    USING p_repository, p_snapshot, p_model, p_query, p_limit;
END $$;
REVOKE ALL ON FUNCTION palimpsest_semantic_candidates(uuid, uuid, text, real[], integer) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_semantic_candidates(uuid, uuid, text, real[], integer)
    IS 'app-callable: HNSW-backed nearest chunks of the current tenant for one model (see migration 0007).';
