-- Failures are first-class state (issue 52): a repository's last build and analysis outcome and
-- its reason, stored when it happens, so `repo list`, `repo show`, the web view, `status` and a
-- metric can say why a repository is not indexed instead of only the log.
--
-- One row per (repository, kind). state: ok (the last attempt succeeded or was not needed),
-- retrying (an attempt failed and the bus delivers the request again at retry_at; attempt is the
-- delivery that failed), failed (a deterministic failure: a refused source, a refused token, a
-- limit hit; not retried for the same cause), dead_lettered (the last delivery failed; the
-- request is a dead letter, dead_letter_id once the recorder has stored it). The reason is the
-- handler's words (never a secret: errors are redacted where they are raised).

CREATE TABLE repository_outcomes (
    tenant_id       uuid NOT NULL,
    repository_id   uuid NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('build', 'analysis')),
    state           text NOT NULL CHECK (state IN ('ok', 'retrying', 'failed', 'dead_lettered')),
    reason          text CHECK (length(reason) <= 2000),
    attempt         integer CHECK (attempt IS NULL OR attempt >= 1),
    max_attempts    integer CHECK (max_attempts IS NULL OR max_attempts >= 1),
    retry_at        timestamptz,
    event_id        uuid,
    dead_letter_id  bigint,
    failing_since   timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, repository_id, kind),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
CREATE INDEX repository_outcomes_failing ON repository_outcomes (tenant_id, kind) WHERE state <> 'ok';
CREATE INDEX repository_outcomes_event ON repository_outcomes (tenant_id, event_id) WHERE event_id IS NOT NULL;
SELECT palimpsest_tenant_table('repository_outcomes');
