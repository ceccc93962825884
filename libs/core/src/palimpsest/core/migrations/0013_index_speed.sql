-- Code-index speed and size (measured with `palimpsest bench index --files 50000`).
--
-- 1. Cascades, set-based. The per-row foreign keys from code_chunks, code_symbols and code_facts
--    to code_blobs, from code_chunk_embeddings to code_chunks and from code_index_files to
--    code_index_snapshots ran one trigger query per row: ~450 000 parent checks while a first
--    build of 50 000 files wrote its rows (50 000 more when an incremental build copies the
--    previous snapshot's file rows), and ~270 000 cascade queries (1.7 s + 0.65 s) when a
--    repository was deleted. Statement-level triggers with transition tables now delete a deleted
--    blob's chunks, symbols, facts and embeddings, and a deleted snapshot's file rows, in one
--    statement per table. The rows are still really removed, by the statement that deletes their
--    parent, whatever deletes it (re-chunking, garbage collection, pruning snapshots, a
--    repository's or tenant's cascade). What the foreign keys checked on insert is kept by the
--    writers: the chunker writes a blob's rows only in the transaction that inserts the blob,
--    under the repository's advisory lock (garbage collection takes the same lock), and locks its
--    snapshot row (FOR KEY SHARE) before writing the snapshot's files; the embedder locks the
--    blobs it stores vectors for (FOR KEY SHARE) and inserts only vectors of chunks that exist.
-- 2. Symbols and facts are only ever read per blob (a snapshot's blobs, a blob's definitions),
--    never by ordinal, so their (…, blob_sha, ordinal) primary keys become plain (…, blob_sha)
--    indexes, which B-tree deduplication stores once per blob instead of once per row. Ordinals
--    stay unique per blob by construction (enumerated by the one analysis of the one blob row).
-- 3. "The first path of the snapshot that holds this blob" (lexical and semantic hits) walked the
--    path-ordered primary key and filtered ~10 000 entries per hit; the blob index now carries
--    the path, so it answers that ORDER BY path LIMIT 1 directly.
-- 4. The lexical candidate function returns at most p_limit rows (a few dozen); saying so lets
--    the planner join its rows by index instead of hashing whole tables.
-- 5. Snapshots record the analysis version that produced their file rows: an incremental build
--    copies the previous snapshot's rows only when it is the current one (else it lists the tree).

DO $$
DECLARE
    fk record;
BEGIN
    FOR fk IN
        SELECT c.conrelid::regclass AS tbl, c.conname
        FROM pg_constraint c
        WHERE c.contype = 'f'
          AND (c.conrelid, c.confrelid) IN (
              ('code_chunks'::regclass, 'code_blobs'::regclass),
              ('code_symbols'::regclass, 'code_blobs'::regclass),
              ('code_facts'::regclass, 'code_blobs'::regclass),
              ('code_chunk_embeddings'::regclass, 'code_chunks'::regclass),
              ('code_index_files'::regclass, 'code_index_snapshots'::regclass))
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tbl, fk.conname);
    END LOOP;
END $$;

-- It deletes exactly the rows of the blobs the statement deleted: tenant, repository and blob SHA
-- all match rows of the transition table, which holds only rows the deleting role could delete
-- (its tenant's, under the policy). So it runs as its owner (SECURITY DEFINER, like the candidate
-- functions of 0004) and spares the policy's per-row check on ~400 000 rows of a repository;
-- an owner without BYPASSRLS gets the same result through the policy. When no blob of a
-- repository is left (its index is being deleted), its rows are found by repository, one pass
-- per table, instead of one index lookup per blob.
CREATE FUNCTION palimpsest_code_blobs_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    r record;
    whole boolean;
    tbl text;
BEGIN
    FOR r IN SELECT DISTINCT g.tenant_id, g.repository_id FROM gone g LOOP
        whole := NOT EXISTS (
            SELECT 1 FROM code_blobs b WHERE b.tenant_id = r.tenant_id AND b.repository_id = r.repository_id);
        FOREACH tbl IN ARRAY ARRAY['code_chunk_embeddings', 'code_chunks', 'code_symbols', 'code_facts'] LOOP
            IF whole THEN
                EXECUTE format('DELETE FROM %I x WHERE x.tenant_id = $1 AND x.repository_id = $2', tbl)
                    USING r.tenant_id, r.repository_id;
            ELSE
                EXECUTE format('DELETE FROM %I x USING gone g WHERE g.tenant_id = $1 AND g.repository_id = $2'
                               ' AND x.tenant_id = g.tenant_id AND x.repository_id = g.repository_id'
                               ' AND x.blob_sha = g.blob_sha', tbl)
                    USING r.tenant_id, r.repository_id;
            END IF;
        END LOOP;
    END LOOP;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION palimpsest_code_blobs_deleted() FROM PUBLIC;
CREATE TRIGGER code_blobs_cascade AFTER DELETE ON code_blobs
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION palimpsest_code_blobs_deleted();

-- A snapshot's file rows, likewise (by the primary key's (tenant_id, snapshot_id) prefix).
CREATE FUNCTION palimpsest_code_snapshots_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM code_index_files f USING gone g WHERE f.tenant_id = g.tenant_id AND f.snapshot_id = g.snapshot_id;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION palimpsest_code_snapshots_deleted() FROM PUBLIC;
CREATE TRIGGER code_index_snapshots_cascade AFTER DELETE ON code_index_snapshots
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION palimpsest_code_snapshots_deleted();

ALTER TABLE code_symbols DROP CONSTRAINT code_symbols_pkey;
CREATE INDEX code_symbols_blob ON code_symbols (tenant_id, repository_id, blob_sha);
ALTER TABLE code_facts DROP CONSTRAINT code_facts_pkey;
CREATE INDEX code_facts_blob ON code_facts (tenant_id, repository_id, blob_sha);

DROP INDEX code_index_files_blob;
CREATE INDEX code_index_files_blob ON code_index_files (tenant_id, snapshot_id, blob_sha, path);

ALTER FUNCTION palimpsest_lexical_candidates(uuid, uuid, tsquery, text, integer, integer) ROWS 50;

ALTER TABLE code_index_snapshots ADD COLUMN analysis_version integer;
