-- Reviews people keep (issue 21): findings with an identity across pushes, incremental reviews,
-- inline positions, and one state row per pull request.
--
-- review_findings.fingerprint   stable identity: path, the anchoring code's content hash, the
--                               enclosing symbol, the category and the normalised message (never
--                               a line number), so the same problem keeps it when lines above move
-- review_findings.anchor_hash   hash of the anchoring lines (normalised), and their count: a later
-- review_findings.anchor_lines  push whose file no longer has them resolves the finding
-- review_findings.side          'new' (head side: added or context lines) or 'old' (removed lines)
-- review_findings.position      where the provider shows it (lines, side, kind, paths) or NULL: it
--                               does not map onto the pull request's diff (summary only)
-- review_findings.posted_as     'inline' | 'summary' | 'existing' (posted by an earlier review)
-- reviews.scope / commits       'full' or 'incremental' (the commits since the last reviewed head)
-- reviews.since_sha             the last reviewed head an incremental review started from
-- reviews.merge_base            the diff's start (providers want it for positions)
-- reviews.resolved             fingerprints of earlier findings whose anchor changed or vanished
-- review_pull_requests          per pull request: the newest request posted (an older one never
--                               overwrites a newer one's summary), and where its summary lives
ALTER TABLE review_findings
    ADD COLUMN fingerprint text CHECK (fingerprint IS NULL OR fingerprint ~ '^[0-9a-f]{32}$'),
    ADD COLUMN anchor_hash text CHECK (anchor_hash IS NULL OR anchor_hash ~ '^[0-9a-f]{16,64}$'),
    ADD COLUMN anchor_lines integer NOT NULL DEFAULT 0 CHECK (anchor_lines >= 0),
    ADD COLUMN symbol text CHECK (symbol IS NULL OR length(symbol) <= 200),
    ADD COLUMN side text NOT NULL DEFAULT 'new' CHECK (side IN ('new', 'old')),
    ADD COLUMN position jsonb,
    ADD COLUMN posted_as text CHECK (posted_as IS NULL OR posted_as IN ('inline', 'summary', 'existing'));
CREATE INDEX review_findings_fingerprint ON review_findings (tenant_id, fingerprint)
    WHERE fingerprint IS NOT NULL;

ALTER TABLE reviews
    ADD COLUMN scope text NOT NULL DEFAULT 'full' CHECK (scope IN ('full', 'incremental')),
    ADD COLUMN commits jsonb NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN since_sha text CHECK (since_sha IS NULL OR since_sha ~ '^[0-9a-f]{7,64}$'),
    ADD COLUMN merge_base text CHECK (merge_base IS NULL OR merge_base ~ '^[0-9a-f]{7,64}$'),
    ADD COLUMN resolved jsonb NOT NULL DEFAULT '[]'::jsonb;
CREATE INDEX reviews_pull_request ON reviews (tenant_id, repository_id, provider, number, created_at)
    WHERE number IS NOT NULL;

CREATE TABLE review_pull_requests (
    tenant_id        uuid NOT NULL,
    repository_id    uuid NOT NULL,
    provider         text NOT NULL CHECK (provider IN ('github', 'gitlab', 'bitbucket')),
    number           integer NOT NULL,
    review_id        uuid NOT NULL,
    head_sha         text NOT NULL CHECK (length(head_sha) BETWEEN 7 AND 64),
    requested_at     timestamptz NOT NULL,
    summary_ref      text CHECK (summary_ref IS NULL OR length(summary_ref) <= 200),
    posted_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, repository_id, provider, number),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
SELECT palimpsest_tenant_table('review_pull_requests');
