-- Chunk rows are compressed from 1 536 bytes instead of 2 032 (issue 23). The chunker now sends
-- chunks in a binary COPY; its staging table no longer holds each lexical vector as text, so fewer
-- staged rows outgrew the default target and PostgreSQL compressed fewer contents than before:
-- kafka's chunks took 2 MB more (content 34.3 -> 36.3 MB) and the index grew by 1 %. At 1 536 bytes
-- they take 162.9 MB with their indexes against 163.0 MB before, for the same CPU (10.1-10.2 CPU-s
-- to load them either way). A target of 1 024 moved more values out of line (the heap shrank by a
-- quarter), which searches would read back from the TOAST table.
ALTER TABLE code_chunks SET (toast_tuple_target = 1536);
