-- Chunk embeddings, one partition per repository (issue 23).
--
-- Measured with `palimpsest bench embed` against the instant loopback model (2 cores, another job
-- running): storing 9 629 vectors of 384 dimensions took 19.4 s (497 chunks/s) with the shared
-- partial HNSW index of 0007, and 3.4 s (2 835 chunks/s) without it; building the index afterwards
-- took 2.2 s. Every vector was inserted
-- into one graph that held all tenants' vectors, ~1.7 ms each, and each semantic search walked that
-- graph past other repositories' vectors (the filter is applied after the walk).
--
-- So each repository's vectors get their own partition with their own HNSW indexes (per dimension
-- present), built after a bulk load instead of maintained row by row:
--
-- * palimpsest_embedding_partition(repository) creates and attaches the repository's partition
--   (before every write; ATTACH takes no lock that blocks readers or writers of other
--   partitions). A partition has the parent's columns, keys and forced tenant policy.
-- * palimpsest_embedding_bulk_load(repository, rows), where a run starts, opens the partition
--   and drops its HNSW indexes when the run is about to write at least as many vectors as the
--   partition holds (and at least 1 000): the
--   first embedding of a repository, a model change. Searches meanwhile read the partition
--   without the graph (exact, slower, correct).
-- * palimpsest_index_embeddings(repository) builds the HNSW index of each supported dimension the
--   partition holds and lacks (the embedder calls it when a run ends), and refreshes its
--   statistics. Later incremental runs insert through the index as before. It may use 256 MB of
--   maintenance memory: a graph of 100 000 vectors of 384 dimensions (~180 MB) is built in memory;
--   a larger one falls back to pgvector's slower build on disk instead of growing further.
-- * palimpsest_drop_embedding_partitions() drops the partitions whose repository is gone (their
--   rows went with the blobs already): after a tenant's deletion, and on every maintenance tick
--   for repositories an installation lost.
--
-- The partition's tenant is kept in its catalog comment: the functions run as the owner, who may
-- be under the tenant policy (FORCE), so the catalog is the tenant-independent record.
-- Semantic search (palimpsest_semantic_candidates) is unchanged: it names the repository, so the
-- planner reads that one partition and its index.

ALTER TABLE code_chunk_embeddings RENAME TO code_chunk_embeddings_0036;
ALTER INDEX code_chunk_embeddings_pkey RENAME TO code_chunk_embeddings_0036_pkey;
ALTER INDEX code_chunk_embeddings_model RENAME TO code_chunk_embeddings_0036_model;
DROP INDEX IF EXISTS code_chunk_embeddings_hnsw_384;
DROP INDEX IF EXISTS code_chunk_embeddings_hnsw_768;
DROP INDEX IF EXISTS code_chunk_embeddings_hnsw_1024;
DROP INDEX IF EXISTS code_chunk_embeddings_hnsw_1536;
DROP INDEX IF EXISTS code_chunk_embeddings_hnsw_3072;

-- the columns, defaults, generated dimension and checks of 0006, now partitioned
CREATE TABLE code_chunk_embeddings (
    LIKE code_chunk_embeddings_0036 INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS,
    PRIMARY KEY (tenant_id, repository_id, blob_sha, ordinal, model)
) PARTITION BY LIST (repository_id);
CREATE INDEX code_chunk_embeddings_model ON code_chunk_embeddings (tenant_id, repository_id, model);
SELECT palimpsest_tenant_table('code_chunk_embeddings');

-- The partition of a repository: its name, and the calling tenant's claim on the repository.
CREATE FUNCTION palimpsest_embedding_partition_name(p_repository uuid) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT 'embeddings_' || replace(p_repository::text, '-', '') $$;

CREATE FUNCTION palimpsest_embedding_owner_check(p_repository uuid) RETURNS uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    tenant uuid := NULLIF(current_setting('app.tenant_id', true), '')::uuid;
BEGIN
    IF tenant IS NULL OR NOT EXISTS (
        SELECT 1 FROM repositories r WHERE r.tenant_id = tenant AND r.repository_id = p_repository) THEN
        RAISE EXCEPTION 'repository % is not one of the current tenant''s', p_repository
            USING ERRCODE = '42501';
    END IF;
    RETURN tenant;
END $$;
REVOKE ALL ON FUNCTION palimpsest_embedding_owner_check(uuid) FROM PUBLIC;

CREATE FUNCTION palimpsest_embedding_partition(p_repository uuid) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    tenant uuid := palimpsest_embedding_owner_check(p_repository);
    part text := palimpsest_embedding_partition_name(p_repository);
BEGIN
    IF to_regclass(part) IS NOT NULL THEN
        RETURN part;
    END IF;
    -- two embedders creating the same partition: the second waits, then finds it
    PERFORM pg_advisory_xact_lock(hashtext('palimpsest_embedding_partition'), hashtext(p_repository::text));
    IF to_regclass(part) IS NULL THEN
        -- parallel_workers: an index build uses as many workers as max_parallel_maintenance_workers
        -- allows, not the few PostgreSQL grants a small table (10 000 vectors: 1.3 s alone, 0.9 s
        -- with one worker)
        EXECUTE format('CREATE TABLE %I (LIKE code_chunk_embeddings INCLUDING DEFAULTS INCLUDING GENERATED'
                       ' INCLUDING CONSTRAINTS) WITH (parallel_workers = 8)', part);
        EXECUTE format('COMMENT ON TABLE %I IS %L', part,
                       format('embeddings of repository %s of tenant %s', p_repository, tenant));
        PERFORM palimpsest_tenant_table(part::regclass);
        EXECUTE format('ALTER TABLE code_chunk_embeddings ATTACH PARTITION %I FOR VALUES IN (%L)',
                       part, p_repository);
    END IF;
    RETURN part;
END $$;
REVOKE ALL ON FUNCTION palimpsest_embedding_partition(uuid) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_embedding_partition(uuid)
    IS 'app-callable: create (once) the partition of the current tenant''s repository for its chunk embeddings (migration 0037).';

-- The partition's HNSW indexes, by dimension (pgvector indexes `vector` up to 2000 dimensions and
-- `halfvec` beyond; the embedder refuses other dimensions).
CREATE FUNCTION palimpsest_embedding_hnsw(p_part text) RETURNS TABLE (index_name text, dimension integer)
LANGUAGE sql STABLE AS $$
    SELECT p_part || '_hnsw_' || d, d FROM unnest(ARRAY[384, 768, 1024, 1536, 3072]) d
$$;

CREATE FUNCTION palimpsest_embedding_bulk_load(p_repository uuid, p_rows integer) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    part text := palimpsest_embedding_partition(p_repository);  -- checked and created once
    held bigint;
    idx record;
    dropped boolean := false;
BEGIN
    IF p_rows < 1000 THEN
        RETURN false;
    END IF;
    EXECUTE format('SELECT count(*) FROM %I', part) INTO held;
    IF p_rows < held THEN
        RETURN false;
    END IF;
    FOR idx IN SELECT h.index_name FROM palimpsest_embedding_hnsw(part) h WHERE to_regclass(h.index_name) IS NOT NULL
    LOOP
        EXECUTE format('DROP INDEX %I', idx.index_name);
        dropped := true;
    END LOOP;
    RETURN dropped;
END $$;
REVOKE ALL ON FUNCTION palimpsest_embedding_bulk_load(uuid, integer) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_embedding_bulk_load(uuid, integer)
    IS 'app-callable: before writing p_rows vectors of a repository, open its partition and drop its HNSW indexes when rebuilding them after the load is cheaper (migration 0037).';

CREATE FUNCTION palimpsest_index_embeddings(p_repository uuid, p_analyze boolean DEFAULT false) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT SET maintenance_work_mem = '256MB' AS $$
DECLARE
    tenant uuid := palimpsest_embedding_owner_check(p_repository);
    part text := palimpsest_embedding_partition_name(p_repository);
    idx record;
    present integer[];
    typ text;
    built integer := 0;
BEGIN
    IF to_regclass(part) IS NULL THEN
        RETURN 0;
    END IF;
    IF to_regtype('vector') IS NOT NULL THEN
        -- the dimensions present: one vector of each model, the models found by walking the
        -- (tenant, repository, model) index (a run after a handful of new vectors reads no more)
        EXECUTE format(
            'WITH RECURSIVE m(model) AS ('
            '  SELECT min(model) FROM %1$I WHERE tenant_id = $1 AND repository_id = $2'
            '  UNION ALL'
            '  SELECT (SELECT min(x.model) FROM %1$I x'
            '          WHERE x.tenant_id = $1 AND x.repository_id = $2 AND x.model > m.model)'
            '  FROM m WHERE m.model IS NOT NULL)'
            ' SELECT array_agg(DISTINCT (SELECT y.dimension FROM %1$I y WHERE y.tenant_id = $1'
            '                            AND y.repository_id = $2 AND y.model = m.model LIMIT 1))'
            ' FROM m WHERE m.model IS NOT NULL', part) INTO present USING tenant, p_repository;
        FOR idx IN SELECT h.index_name, h.dimension FROM palimpsest_embedding_hnsw(part) h
                   WHERE h.dimension = ANY(present) AND to_regclass(h.index_name) IS NULL
        LOOP
            typ := CASE WHEN idx.dimension > 2000 THEN 'halfvec' ELSE 'vector' END;
            EXECUTE format('CREATE INDEX %I ON %I USING hnsw ((embedding::%s(%s)) %s_cosine_ops)'
                           ' WHERE dimension = %s', idx.index_name, part, typ, idx.dimension, typ, idx.dimension);
            built := built + 1;
        END LOOP;
    END IF;
    IF built > 0 OR p_analyze THEN
        EXECUTE format('ANALYZE %I', part);
    END IF;
    RETURN built;
END $$;
REVOKE ALL ON FUNCTION palimpsest_index_embeddings(uuid, boolean) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_index_embeddings(uuid, boolean)
    IS 'app-callable: build the missing HNSW indexes of a repository''s embeddings partition, then refresh its statistics (migration 0037).';

CREATE FUNCTION palimpsest_drop_embedding_partitions() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT SET lock_timeout = '500ms' AS $$
DECLARE
    caller text := current_setting('app.tenant_id', true);
    part record;
    gone boolean;
    dropped integer := 0;
BEGIN
    FOR part IN
        SELECT c.relname, d.m[1]::uuid AS repo, d.m[2] AS tenant
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        CROSS JOIN LATERAL (SELECT regexp_match(obj_description(c.oid, 'pg_class'),
                            'repository ([0-9a-f-]{36}) of tenant ([0-9a-f-]{36})') AS m) d
        WHERE i.inhparent = 'code_chunk_embeddings'::regclass AND d.m IS NOT NULL
    LOOP
        -- looked up as the partition's tenant: the owner may be under the tenant policy (FORCE)
        PERFORM set_config('app.tenant_id', part.tenant, true);
        gone := NOT EXISTS (SELECT 1 FROM repositories r WHERE r.tenant_id = part.tenant::uuid
                            AND r.repository_id = part.repo);
        CONTINUE WHEN NOT gone;
        -- dropping a partition locks the parent exclusively: queries queue behind the drop while
        -- it waits for those running, so it waits half a second at most and a later call retries
        BEGIN
            EXECUTE format('DROP TABLE %I', part.relname);
            dropped := dropped + 1;
        EXCEPTION WHEN lock_not_available THEN
            RAISE NOTICE 'embeddings partition % is busy; a later call drops it', part.relname;
        END;
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(caller, ''), true);
    RETURN dropped;
END $$;
REVOKE ALL ON FUNCTION palimpsest_drop_embedding_partitions() FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_drop_embedding_partitions()
    IS 'app-callable: drop the embeddings partitions whose repository was deleted, any tenant''s (their rows went with the blobs; migration 0037).';

-- Existing vectors move to their repositories' partitions, which get their indexes built once. The
-- owner reads every tenant's rows of the old table (its policy no longer forced) and writes each
-- repository's as that repository's tenant.
ALTER TABLE code_chunk_embeddings_0036 NO FORCE ROW LEVEL SECURITY;
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT tenant_id, repository_id FROM code_chunk_embeddings_0036 LOOP
        PERFORM set_config('app.tenant_id', r.tenant_id::text, true);
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM repositories x WHERE x.tenant_id = r.tenant_id
                                  AND x.repository_id = r.repository_id);
        PERFORM palimpsest_embedding_partition(r.repository_id);
        INSERT INTO code_chunk_embeddings (tenant_id, repository_id, blob_sha, ordinal, model, embedding,
                                           truncated, created_at)
        SELECT tenant_id, repository_id, blob_sha, ordinal, model, embedding, truncated, created_at
        FROM code_chunk_embeddings_0036 WHERE tenant_id = r.tenant_id AND repository_id = r.repository_id;
        PERFORM palimpsest_index_embeddings(r.repository_id, true);
    END LOOP;
    PERFORM set_config('app.tenant_id', '', true);
END $$;
DROP TABLE code_chunk_embeddings_0036;

-- The whole-table statistics refresh of 0006 would now visit every partition; a run refreshes its
-- repository's partition through palimpsest_index_embeddings instead.
DROP FUNCTION palimpsest_analyze_embeddings();
