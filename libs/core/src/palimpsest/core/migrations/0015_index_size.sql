-- Code-index size (issue 5; measured with `palimpsest bench index --files 50000`: 259.8 MB with two
-- kept snapshots, where the target is 200 MB). Where the bytes were: a symbol or fact row cost
-- ~150 bytes, two thirds of it row header and the (tenant, repository, blob) key, and the
-- symbols and facts tables with their indexes held 71 MB; the chunks' primary key 16.5 MB; the
-- files' blob index 9.8 MB per snapshot.
--
-- 1. A blob's symbols and facts become two text columns of its code_blobs row, one line per
--    record, tab-separated fields in the old column order, empty for NULL (the format and its
--    Python side: palimpsest.index.records). code_symbols and code_facts stay readable, with the
--    same columns, as views over code_blobs that run as their caller (security_invoker), so the
--    blob's forced row-level security applies unchanged. They are read-only: the chunker writes
--    the columns with the blob row, in the same statement, so a blob never has half its records.
-- 2. Definition lookup by name: a GIN index over the names of each blob's symbols, used through
--    a SECURITY DEFINER function, as for the lexical candidates (array overlap is not LEAKPROOF,
--    so under RLS PostgreSQL would not use the index).
-- 3. code_chunks' (tenant, repository, blob, ordinal) primary key becomes a (tenant, repository,
--    blob) index, which B-tree deduplication stores once per blob (6.4 MB instead of 16.5 MB).
--    Every reader comes by blob; ordinals are unique per blob by construction (0013 has the
--    argument, made for symbols and facts), and the embedder checks (blob, ordinal) exists.
-- 4. The files' blob index (what finds "the first path of this snapshot holding this blob" for a
--    search hit) becomes a hash index on the blob SHA: 2.1 MB instead of 9.8 MB per snapshot. A
--    lookup returns the blob's paths in the kept snapshots, which the query filters and sorts.

-- The owner rewrites every tenant's rows here; FORCE makes even the owner subject to the
-- policy, so it is lifted for this transaction and restored below.
ALTER TABLE code_blobs NO FORCE ROW LEVEL SECURITY;
ALTER TABLE code_symbols NO FORCE ROW LEVEL SECURITY;
ALTER TABLE code_facts NO FORCE ROW LEVEL SECURITY;

ALTER TABLE code_blobs ADD COLUMN symbols text, ADD COLUMN facts text;

UPDATE code_blobs b SET symbols = s.records
FROM (
    SELECT tenant_id, repository_id, blob_sha,
           string_agg(translate(name, E'\t\n\r', '   ') || E'\t' || translate(kind, E'\t\n\r', '   ')
                      || E'\t' || start_line || E'\t' || end_line
                      || E'\t' || coalesce(translate(parent, E'\t\n\r', '   '), ''),
                      E'\n' ORDER BY ordinal) AS records
    FROM code_symbols GROUP BY tenant_id, repository_id, blob_sha
) s
WHERE b.tenant_id = s.tenant_id AND b.repository_id = s.repository_id AND b.blob_sha = s.blob_sha;

UPDATE code_blobs b SET facts = f.records
FROM (
    SELECT tenant_id, repository_id, blob_sha,
           string_agg(translate(kind, E'\t\n\r', '   ') || E'\t' || translate(name, E'\t\n\r', '   ')
                      || E'\t' || line
                      || E'\t' || coalesce(translate(target, E'\t\n\r', '   '), '')
                      || E'\t' || coalesce(translate(detail, E'\t\n\r', '   '), ''),
                      E'\n' ORDER BY ordinal) AS records
    FROM code_facts GROUP BY tenant_id, repository_id, blob_sha
) f
WHERE b.tenant_id = f.tenant_id AND b.repository_id = f.repository_id AND b.blob_sha = f.blob_sha;

DROP TABLE code_symbols;
DROP TABLE code_facts;
ALTER TABLE code_blobs FORCE ROW LEVEL SECURITY;

-- The records of one blob's text as rows (inlined into the calling query: one SELECT, IMMUTABLE).
CREATE FUNCTION palimpsest_symbol_rows(p_records text)
RETURNS TABLE (ordinal integer, name text, kind text, start_line integer, end_line integer, parent text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (r.n - 1)::integer, split_part(r.line, E'\t', 1), split_part(r.line, E'\t', 2),
           split_part(r.line, E'\t', 3)::integer, split_part(r.line, E'\t', 4)::integer,
           NULLIF(split_part(r.line, E'\t', 5), '')
    FROM string_to_table(p_records, E'\n') WITH ORDINALITY AS r(line, n)
$$;

CREATE FUNCTION palimpsest_fact_rows(p_records text)
RETURNS TABLE (ordinal integer, kind text, name text, line integer, target text, detail text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (r.n - 1)::integer, split_part(r.line, E'\t', 1), split_part(r.line, E'\t', 2),
           split_part(r.line, E'\t', 3)::integer, NULLIF(split_part(r.line, E'\t', 4), ''),
           NULLIF(split_part(r.line, E'\t', 5), '')
    FROM string_to_table(p_records, E'\n') WITH ORDINALITY AS r(line, n)
$$;

CREATE FUNCTION palimpsest_symbol_names(p_records text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(DISTINCT split_part(r.line, E'\t', 1)) FROM string_to_table(p_records, E'\n') AS r(line)
$$;

CREATE VIEW code_symbols WITH (security_invoker = true) AS
    SELECT b.tenant_id, b.repository_id, b.blob_sha, s.ordinal, s.name, s.kind, s.start_line, s.end_line, s.parent
    FROM code_blobs b CROSS JOIN LATERAL palimpsest_symbol_rows(b.symbols) s;
COMMENT ON VIEW code_symbols IS 'read-only: the symbols of each blob (code_blobs.symbols, migration 0015).';

CREATE VIEW code_facts WITH (security_invoker = true) AS
    SELECT b.tenant_id, b.repository_id, b.blob_sha, f.ordinal, f.kind, f.name, f.line, f.target, f.detail
    FROM code_blobs b CROSS JOIN LATERAL palimpsest_fact_rows(b.facts) f;
COMMENT ON VIEW code_facts IS 'read-only: the graph facts of each blob (code_blobs.facts, migration 0015).';

CREATE INDEX code_blobs_symbol_names ON code_blobs USING gin (palimpsest_symbol_names(symbols));

-- A build merges this index's GIN pending list with the lexical one's: left unmerged, every name
-- lookup scanned the up-to-4 MB list a bulk load leaves (~1 ms a name, found by bench review).
CREATE OR REPLACE FUNCTION palimpsest_merge_lexical_index() RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT gin_clean_pending_list('code_chunks_lexical'::regclass)
         + gin_clean_pending_list('code_blobs_symbol_names'::regclass)
$$;

-- The blobs of a repository that define any of p_names, with their symbols, for the calling
-- transaction's tenant (the same tenant expression as the policy; see palimpsest_lexical_candidates
-- in 0004). The caller reads the matching records with palimpsest_symbol_rows.
CREATE FUNCTION palimpsest_symbol_blobs(p_repository uuid, p_names text[]) RETURNS TABLE (blob_sha text, symbols text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 20 AS $$
    SELECT b.blob_sha, b.symbols FROM code_blobs b
    WHERE b.tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
      AND b.repository_id = p_repository
      AND palimpsest_symbol_names(b.symbols) && p_names
$$;
REVOKE ALL ON FUNCTION palimpsest_symbol_blobs(uuid, text[]) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_symbol_blobs(uuid, text[])
    IS 'app-callable: GIN-backed blobs of the current tenant that define any of the names (migration 0015).';

-- The cascade of 0013, without the two tables that are now columns of the blob row.
CREATE OR REPLACE FUNCTION palimpsest_code_blobs_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    r record;
    whole boolean;
    tbl text;
BEGIN
    FOR r IN SELECT DISTINCT g.tenant_id, g.repository_id FROM gone g LOOP
        whole := NOT EXISTS (
            SELECT 1 FROM code_blobs b WHERE b.tenant_id = r.tenant_id AND b.repository_id = r.repository_id);
        FOREACH tbl IN ARRAY ARRAY['code_chunk_embeddings', 'code_chunks'] LOOP
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

CREATE OR REPLACE FUNCTION palimpsest_analyze_code_index() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    ANALYZE code_index_files;
    ANALYZE code_blobs;
    ANALYZE code_chunks;
END $$;

ALTER TABLE code_chunks DROP CONSTRAINT code_chunks_pkey;
CREATE INDEX code_chunks_blob ON code_chunks (tenant_id, repository_id, blob_sha);

DROP INDEX code_index_files_blob;
CREATE INDEX code_index_files_blob ON code_index_files USING hash (blob_sha);
