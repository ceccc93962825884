-- Planner statistics only where a plan reads them (issue 23). A build of 500 blobs or more ends with
-- palimpsest_analyze_code_index() inside its transaction, and half of that ANALYZE went to columns
-- no estimate uses:
--   code_chunks.content           long source text; searches reach chunks through the lexical GIN
--                                 index and the blob, and only then match content by regex
--   code_blobs.symbols, .facts    record lists read whole by blob (migration 0015)
--   code_blobs_symbol_names       its expression's statistics cost one palimpsest_symbol_names call
--                                 per sampled row; palimpsest_symbol_blobs asks it for a handful
--                                 of names (the default selectivity of && already picks the index)
-- On bench index's 50 000 files that ANALYZE took 0.66-0.94 s before and 0.34-0.56 s after.
ALTER TABLE code_chunks ALTER COLUMN content SET STATISTICS 0;
ALTER TABLE code_blobs ALTER COLUMN symbols SET STATISTICS 0, ALTER COLUMN facts SET STATISTICS 0;
ALTER INDEX code_blobs_symbol_names ALTER COLUMN 1 SET STATISTICS 0;
