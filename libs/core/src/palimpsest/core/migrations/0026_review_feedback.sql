-- What happens to posted findings (issue 21).
--
-- review_threads    one row per finding posted inline on a pull request (by fingerprint): the
--                   provider's thread (GitHub review comment id, GitLab discussion id, Bitbucket
--                   comment id) and first comment (GitLab note id), so a webhook about a reply, a
--                   reaction or a resolution finds the finding it is about
-- review_feedback   what happened: resolved / unresolved (by a person, from the provider's
--                   webhook), reply, reaction (its name in detail), code_changed (a later push
--                   changed or removed the code the finding pointed at; recorded by the reviewer)

CREATE TABLE review_threads (
    tenant_id      uuid NOT NULL,
    repository_id  uuid NOT NULL,
    provider       text NOT NULL CHECK (provider IN ('github', 'gitlab', 'bitbucket')),
    number         integer NOT NULL,
    fingerprint    text NOT NULL CHECK (length(fingerprint) BETWEEN 16 AND 64),
    thread_ref     text NOT NULL CHECK (length(thread_ref) BETWEEN 1 AND 200),
    comment_ref    text CHECK (comment_ref IS NULL OR length(comment_ref) BETWEEN 1 AND 200),
    review_id      uuid NOT NULL,
    path           text NOT NULL CHECK (length(path) BETWEEN 1 AND 4096),
    category       text NOT NULL CHECK (length(category) BETWEEN 1 AND 100),
    severity       text NOT NULL CHECK (severity IN ('info', 'minor', 'major', 'critical')),
    state          text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'resolved')),
    posted_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, repository_id, provider, number, fingerprint),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
CREATE INDEX review_threads_ref ON review_threads (tenant_id, repository_id, provider, thread_ref);
CREATE INDEX review_threads_comment ON review_threads (tenant_id, repository_id, provider, comment_ref)
    WHERE comment_ref IS NOT NULL;

CREATE TABLE review_feedback (
    tenant_id      uuid NOT NULL,
    feedback_id    uuid NOT NULL,
    repository_id  uuid NOT NULL,
    provider       text NOT NULL CHECK (provider IN ('github', 'gitlab', 'bitbucket')),
    number         integer NOT NULL,
    fingerprint    text NOT NULL CHECK (length(fingerprint) BETWEEN 16 AND 64),
    category       text NOT NULL CHECK (length(category) BETWEEN 1 AND 100),
    kind           text NOT NULL CHECK (kind IN ('resolved', 'unresolved', 'reply', 'reaction', 'code_changed')),
    detail         text CHECK (detail IS NULL OR length(detail) <= 200),
    actor          text CHECK (actor IS NULL OR length(actor) <= 200),
    source         text NOT NULL CHECK (length(source) BETWEEN 1 AND 300),  -- delivery:<id> or review:<id>
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, feedback_id),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
-- a redelivered webhook or a repeated review records nothing twice
CREATE UNIQUE INDEX review_feedback_once ON review_feedback (tenant_id, source, fingerprint, kind);
CREATE INDEX review_feedback_repository ON review_feedback (tenant_id, repository_id, created_at);

SELECT palimpsest_tenant_table('review_threads');
SELECT palimpsest_tenant_table('review_feedback');
