-- Co-change scored by evidence (issue 43): a pair's count alone cannot tell a habit from a hub.
-- Beside each path's last change, the full scan now stores how many counted commits (those of
-- 1..max_files_per_commit files, the commits pairs are counted from) changed it and the oldest of
-- them; recency_scans keeps how many counted commits the last full scan read. With them a pair's
-- conditional share (together / the changed file's commits) and its lift over the partner's base
-- rate (partner's commits / counted commits) are read, not guessed (palimpsest.index.cochange).
-- NULL: written before this migration (or by an incremental push, which keeps the full scan's
-- totals); the reviewer then has no evidence to score and warns about nothing until the next scan.
ALTER TABLE file_recency
    ADD COLUMN commits integer CHECK (commits IS NULL OR commits >= 0),
    ADD COLUMN counted_since timestamptz;
ALTER TABLE recency_scans ADD COLUMN counted_commits integer CHECK (counted_commits IS NULL OR counted_commits >= 0);
