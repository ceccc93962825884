-- Snapshots of a review's base (issue 16). `palimpsest review PATH --base B` on a repository whose
-- branch has moved on used the branch's newer snapshot and dropped nearly every candidate as
-- stale. The chunker now builds the base itself when asked (`index.requested` with reason
-- 'review' and the commit), as a *pinned* snapshot: it is found by its commit (a review of that
-- base), it is never the repository's newest (search, the graph, the analysis and the next
-- branch build's incremental base ignore it), it never supersedes the branch's snapshots, and a
-- repository keeps at most a few of them (the oldest go first).
ALTER TABLE code_index_snapshots ADD COLUMN pinned boolean NOT NULL DEFAULT false;
