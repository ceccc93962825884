-- Co-change evidence (issue 6): beside the plain count, each pair keeps its commits weighted by
-- size and age, as of the pair's last co-change (last_at). A sweeping commit of n files pairs
-- every one of them; it now counts 1 / (n - 1) ** (1/3) per pair instead of 1, and a commit's
-- weight halves every three years (palimpsest.index.graph.rank.add_evidence). Ranking decays the
-- stored value from last_at to the present and uses it in place of the count — the blend that
-- `palimpsest bench cochange` measured. NULL: written before this migration; readers fall back
-- to the count until the next full scan fills it.
ALTER TABLE cochange ADD COLUMN evidence real CHECK (evidence IS NULL OR evidence > 0);
