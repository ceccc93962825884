-- Review submissions of the /v1 API (POST .../repositories/{id}/reviews).
--
-- review_submissions  one row per review the API was asked for: the base (a ref or a sha) and either
--                     the head (a ref or a sha of the registered repository) or a unified diff to
--                     apply to the base (stored here, at most 5 MiB, so the event carries only its
--                     id). The reviewer records the outcome on the row (state, reason, the review
--                     and the head it reviewed), so GET by request id answers even when no review
--                     row could be stored (a diff that does not apply has no head).
--
-- A tenant table under forced RLS; deleting a repository (or tenant) cascades through it.

CREATE TABLE review_submissions (
    tenant_id      uuid NOT NULL,
    submission_id  uuid NOT NULL,
    repository_id  uuid NOT NULL,
    request_id     uuid NOT NULL,
    base           text NOT NULL CHECK (length(base) BETWEEN 1 AND 255),
    head           text CHECK (length(head) BETWEEN 1 AND 255),
    diff           text CHECK (octet_length(diff) <= 5242880),
    state          text NOT NULL DEFAULT 'pending'
                   CHECK (state IN ('pending', 'completed', 'failed', 'skipped')),
    reason         text CHECK (length(reason) <= 1000),
    review_id      uuid,
    head_sha       text CHECK (head_sha ~ '^[0-9a-f]{7,64}$'),
    created_at     timestamptz NOT NULL DEFAULT now(),
    completed_at   timestamptz,
    PRIMARY KEY (tenant_id, submission_id),
    -- a head or a diff, never both (the API requires one of them)
    CONSTRAINT review_submissions_head_or_diff CHECK (head IS NULL OR diff IS NULL),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX review_submissions_request ON review_submissions (tenant_id, request_id);
CREATE INDEX review_submissions_repository ON review_submissions (tenant_id, repository_id, submission_id DESC);

SELECT palimpsest_tenant_table('review_submissions');
