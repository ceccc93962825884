-- Chunk embeddings (DESIGN §4): one vector per chunk and model, content addressed like the chunks
-- themselves (repository + blob SHA + ordinal), so a re-index embeds only chunks of new blobs and a
-- model change embeds everything once more without losing the old model's vectors.
--
-- Vectors are stored as real[] so the table works on any PostgreSQL; when pgvector exists,
-- migration 0007 adds partial HNSW expression indexes per supported dimension and the
-- SECURITY DEFINER candidate function that uses them. `dimension` is generated from the array, so
-- a row can never claim a dimension its vector does not have.
--
-- Deleting a chunk (re-chunked or garbage-collected blob, deleted repository) deletes its vectors.

CREATE TABLE code_chunk_embeddings (
    tenant_id      uuid NOT NULL,
    repository_id  uuid NOT NULL,
    blob_sha       text NOT NULL,
    ordinal        integer NOT NULL,
    model          text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
    embedding      real[] NOT NULL,
    dimension      integer GENERATED ALWAYS AS (cardinality(embedding)) STORED,
    truncated      boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, repository_id, blob_sha, ordinal, model),
    FOREIGN KEY (tenant_id, repository_id, blob_sha, ordinal)
        REFERENCES code_chunks (tenant_id, repository_id, blob_sha, ordinal) ON DELETE CASCADE
);
-- "which chunks of this repository still lack a vector of model M" and per-model counts
CREATE INDEX code_chunk_embeddings_model ON code_chunk_embeddings (tenant_id, repository_id, model);

SELECT palimpsest_tenant_table('code_chunk_embeddings');

-- The embedding run's outcome, per snapshot, beside the columns migration 0004 reserved
-- (embedding_state, embedding_reason, embedding_model).
ALTER TABLE code_index_snapshots
    ADD COLUMN embedding_dimension  integer,
    ADD COLUMN embedded_chunks      integer NOT NULL DEFAULT 0,
    ADD COLUMN embedding_pending    integer NOT NULL DEFAULT 0,
    ADD COLUMN embedding_truncated  integer NOT NULL DEFAULT 0,
    ADD COLUMN embedding_updated_at timestamptz;

-- Statistics after a bulk load of vectors (the embedder calls it after large runs).
CREATE FUNCTION palimpsest_analyze_embeddings() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    ANALYZE code_chunk_embeddings;
END $$;
REVOKE ALL ON FUNCTION palimpsest_analyze_embeddings() FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_analyze_embeddings()
    IS 'app-callable: refresh planner statistics of chunk embeddings after a bulk load.';
