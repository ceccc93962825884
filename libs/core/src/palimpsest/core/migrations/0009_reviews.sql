-- Reviews (issue 9, DESIGN §5 "Reviewer").
--
-- reviews           one review per (repository, head sha): the snapshot it read, the mode (brief |
--                   model), the summary, what was dropped and why, the co-change partners the PR
--                   did not touch, the tokens and cost of the model call, whether it was posted
-- review_findings   the model's findings that point at changed lines (new side)
-- review_context    the context the review used, in prompt order: source, path, lines, size,
--                   score, date and annotation
--
-- All are tenant tables under forced RLS; deleting a repository (or tenant) cascades through them.

CREATE TABLE reviews (
    tenant_id          uuid NOT NULL,
    review_id          uuid NOT NULL,
    repository_id      uuid NOT NULL,
    request_id         uuid,
    provider           text NOT NULL DEFAULT 'local'
                       CHECK (provider IN ('github', 'gitlab', 'bitbucket', 'local')),
    number             integer,
    base_sha           text CHECK (base_sha ~ '^[0-9a-f]{7,64}$'),
    head_sha           text NOT NULL DEFAULT '0000000' CHECK (head_sha ~ '^[0-9a-f]{7,64}$'),
    snapshot_id        uuid,
    state              text NOT NULL DEFAULT 'completed' CHECK (state IN ('completed', 'failed', 'skipped')),
    mode               text NOT NULL DEFAULT 'brief' CHECK (mode IN ('brief', 'model')),
    reason             text CHECK (length(reason) <= 1000),
    model              text,
    summary            text NOT NULL DEFAULT '',
    dropped            jsonb NOT NULL DEFAULT '[]'::jsonb,
    cochange_missing   jsonb NOT NULL DEFAULT '[]'::jsonb,
    sources            jsonb NOT NULL DEFAULT '{}'::jsonb,
    findings_dropped   integer NOT NULL DEFAULT 0 CHECK (findings_dropped >= 0),
    prompt_tokens      integer NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens  integer NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    cost_usd           numeric(14, 6) CHECK (cost_usd >= 0),
    duration_s         double precision NOT NULL DEFAULT 0 CHECK (duration_s >= 0),
    posted             boolean NOT NULL DEFAULT false,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, review_id),
    CONSTRAINT reviews_failed_has_reason CHECK (state <> 'failed' OR reason IS NOT NULL),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
-- idempotent per (repository, head sha): a redelivered or repeated request finds the stored review
CREATE UNIQUE INDEX reviews_head ON reviews (tenant_id, repository_id, head_sha);
CREATE INDEX reviews_request ON reviews (tenant_id, request_id) WHERE request_id IS NOT NULL;

CREATE TABLE review_findings (
    tenant_id         uuid NOT NULL,
    review_id         uuid NOT NULL,
    ordinal           integer NOT NULL CHECK (ordinal >= 0),
    path              text NOT NULL CHECK (length(path) BETWEEN 1 AND 4096),
    start_line        integer NOT NULL DEFAULT 1 CHECK (start_line >= 1),
    end_line          integer NOT NULL DEFAULT 1 CHECK (end_line >= start_line),
    severity          text NOT NULL DEFAULT 'info' CHECK (severity IN ('info', 'minor', 'major', 'critical')),
    category          text NOT NULL DEFAULT 'other' CHECK (length(category) BETWEEN 1 AND 100),
    message           text NOT NULL DEFAULT '' CHECK (length(message) <= 10000),
    suggested_change  text CHECK (length(suggested_change) <= 20000),
    PRIMARY KEY (tenant_id, review_id, ordinal),
    FOREIGN KEY (tenant_id, review_id) REFERENCES reviews (tenant_id, review_id) ON DELETE CASCADE
);

CREATE TABLE review_context (
    tenant_id         uuid NOT NULL,
    review_id         uuid NOT NULL,
    ordinal           integer NOT NULL CHECK (ordinal >= 0),
    source            text NOT NULL DEFAULT 'related'
                      CHECK (source IN ('definitions', 'usage', 'related', 'neighbourhood', 'cochange')),
    path              text NOT NULL CHECK (length(path) BETWEEN 1 AND 4096),
    start_line        integer NOT NULL DEFAULT 1 CHECK (start_line >= 1),
    end_line          integer NOT NULL DEFAULT 1 CHECK (end_line >= start_line),
    tokens            integer NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    score             double precision NOT NULL DEFAULT 0 CHECK (score >= 0 AND score <= 1),
    last_modified_at  timestamptz,
    annotation        text,
    PRIMARY KEY (tenant_id, review_id, ordinal),
    FOREIGN KEY (tenant_id, review_id) REFERENCES reviews (tenant_id, review_id) ON DELETE CASCADE
);

SELECT palimpsest_tenant_table('reviews');
SELECT palimpsest_tenant_table('review_findings');
SELECT palimpsest_tenant_table('review_context');
