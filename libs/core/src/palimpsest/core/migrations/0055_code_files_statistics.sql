-- Lexical search (issue 55): the planner knows the files of the snapshot a search reads.
--
-- bench index's search p95 went 20x slower between dbf8fa0 and 29b8a24; the cause is a plan, not
-- statement preparation itself. Every hit's path is looked up per candidate chunk (lexical search's
-- fetch_hits: the snapshot's file rows of the chunk's blob, first path) and an incremental build
-- writes a whole new snapshot of file rows (every unchanged row copied from its base) without
-- refreshing the statistics, which only large parses did (0004). The newest snapshot's id was
-- then unknown to the planner, which estimated its file rows at 1 and, in every statement it
-- planned with that literal id (each unprepared one, and a prepared one's first five), read the
-- path through an index on (tenant_id, snapshot_id, ...) filtering the blob: before 0046 the
-- primary key in path order up to the blob's first path, after it 0046's language index, every file
-- of the snapshot and a sort, once per candidate. On bench index's corpus (20 000 files, after its
-- incremental build, auto_explain per query): 8 400 buffers per candidate, 253 000 for one query,
-- mean 10 194 per query against 2 044 at dbf8fa0; with the statistics refreshed, 1 034 (the hash
-- index on blob_sha, 3-4 buffers per candidate). A pooler that never prepares made every statement
-- so; the issue's bisect saw it as the cluster branch's regression, and 0046 made each one worse.
-- A build now ends by refreshing code_index_files' statistics (the others' only after a large
-- parse, as before); ANALYZE needs the owner, hence this function.
CREATE FUNCTION palimpsest_analyze_code_files() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    ANALYZE code_index_files;
END $$;
REVOKE ALL ON FUNCTION palimpsest_analyze_code_files() FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_analyze_code_files()
    IS 'app-callable: refresh planner statistics of code_index_files after a build wrote a snapshot''s file rows (migration 0055).';
