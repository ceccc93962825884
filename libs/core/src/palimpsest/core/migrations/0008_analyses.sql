-- Analyses and the LLM gateway.
--
-- analyses            one repository analysis (linked to the snapshot it read): Markdown, the
--                     chunk selection, the facts, mode (model | mechanical), state and reason
-- analysis_summaries  the short summary written with it
-- doc_findings        the mechanical documentation check: what a doc claims that the snapshot
--                     contradicts (missing identifiers and paths, unmatched Governs:, stale docs)
-- analysis_schedule   infrastructure: repositories with a new snapshot awaiting their debounced
--                     automatic analysis (ids and times only)
-- llm_routes          per tenant and feature: which model, at which API base, at what price
-- llm_budgets         per tenant: monthly model spend budget in USD
-- llm_usage           one row per model call: tokens, cost, attempts, outcome
--
-- Tenant tables are under forced RLS; deleting a repository (or tenant) cascades through them.

CREATE TABLE analyses (
    tenant_id          uuid NOT NULL,
    analysis_id        uuid NOT NULL,
    repository_id      uuid NOT NULL,
    snapshot_id        uuid,
    commit_sha         text,
    request_id         uuid,
    trigger            text NOT NULL DEFAULT 'request' CHECK (trigger IN ('request', 'snapshot')),
    state              text NOT NULL DEFAULT 'completed' CHECK (state IN ('completed', 'failed')),
    mode               text NOT NULL DEFAULT 'mechanical' CHECK (mode IN ('mechanical', 'model')),
    reason             text CHECK (length(reason) <= 1000),
    model              text,
    markdown           text NOT NULL DEFAULT '',
    selection          jsonb NOT NULL DEFAULT '[]'::jsonb,
    facts              jsonb NOT NULL DEFAULT '{}'::jsonb,
    median_code        timestamptz,
    prompt_tokens      integer NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens  integer NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    cost_usd           numeric(14, 6),
    duration_s         double precision NOT NULL DEFAULT 0 CHECK (duration_s >= 0),
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, analysis_id),
    CONSTRAINT analyses_failed_has_reason CHECK (state <> 'failed' OR reason IS NOT NULL),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
CREATE INDEX analyses_repository ON analyses (tenant_id, repository_id, created_at DESC);
CREATE INDEX analyses_snapshot ON analyses (tenant_id, snapshot_id);
CREATE INDEX analyses_request ON analyses (tenant_id, request_id) WHERE request_id IS NOT NULL;

CREATE TABLE analysis_summaries (
    tenant_id      uuid NOT NULL,
    analysis_id    uuid NOT NULL,
    repository_id  uuid NOT NULL,
    snapshot_id    uuid,
    mode           text NOT NULL DEFAULT 'mechanical' CHECK (mode IN ('mechanical', 'model')),
    model          text,
    summary        text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, analysis_id),
    FOREIGN KEY (tenant_id, analysis_id) REFERENCES analyses (tenant_id, analysis_id) ON DELETE CASCADE
);

CREATE TABLE doc_findings (
    tenant_id      uuid NOT NULL,
    analysis_id    uuid NOT NULL,
    ordinal        integer NOT NULL CHECK (ordinal >= 0),
    repository_id  uuid NOT NULL,
    snapshot_id    uuid,
    doc_path       text NOT NULL CHECK (length(doc_path) BETWEEN 1 AND 4096),
    line           integer NOT NULL DEFAULT 1 CHECK (line >= 0),
    kind           text NOT NULL
                   CHECK (kind IN ('missing_identifier', 'missing_path', 'unmatched_governs', 'stale_doc')),
    claim          text NOT NULL CHECK (length(claim) <= 1000),
    nearest        text,
    detail         text,
    PRIMARY KEY (tenant_id, analysis_id, ordinal),
    FOREIGN KEY (tenant_id, analysis_id) REFERENCES analyses (tenant_id, analysis_id) ON DELETE CASCADE
);

SELECT palimpsest_tenant_table('analyses');
SELECT palimpsest_tenant_table('analysis_summaries');
SELECT palimpsest_tenant_table('doc_findings');

-- ---------------------------------------------------------------- debounced automatic analyses

CREATE TABLE analysis_schedule (
    tenant_id      uuid NOT NULL,
    repository_id  uuid NOT NULL,
    snapshot_id    uuid NOT NULL,
    due_at         timestamptz NOT NULL,
    version        integer NOT NULL DEFAULT 1,
    claimed_until  timestamptz,
    attempts       integer NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, repository_id),
    FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE
);
CREATE INDEX analysis_schedule_due ON analysis_schedule (due_at);
COMMENT ON TABLE analysis_schedule IS 'infrastructure: repositories whose new snapshot awaits its debounced automatic analysis (ids and times only, no repository content). The analyzer''s scheduler claims due rows across tenants with FOR UPDATE SKIP LOCKED; the analysis itself runs in the tenant''s transaction.';

-- ---------------------------------------------------------------- the LLM gateway

CREATE TABLE llm_routes (
    tenant_id            uuid NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    feature              text NOT NULL CHECK (feature IN ('analysis', 'summary', 'review', 'embeddings', 'rerank')),
    model                text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
    api_base             text CHECK (api_base ~ '^https?://[^@/]+(/.*)?$'),
    input_usd_per_mtok   numeric(12, 6) CHECK (input_usd_per_mtok >= 0),
    output_usd_per_mtok  numeric(12, 6) CHECK (output_usd_per_mtok >= 0),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, feature)
);

CREATE TABLE llm_budgets (
    tenant_id    uuid NOT NULL PRIMARY KEY REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    monthly_usd  numeric(14, 4) NOT NULL CHECK (monthly_usd >= 0),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE llm_usage (
    tenant_id          uuid NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    usage_id           uuid NOT NULL,
    feature            text NOT NULL CHECK (feature IN ('analysis', 'summary', 'review', 'embeddings', 'rerank')),
    model              text NOT NULL,
    outcome            text NOT NULL DEFAULT 'ok' CHECK (outcome IN ('ok', 'error', 'budget_exceeded')),
    prompt_tokens      integer NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens  integer NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    cost_usd           numeric(14, 8) CHECK (cost_usd >= 0),
    attempts           integer NOT NULL DEFAULT 1 CHECK (attempts >= 0),
    duration_s         double precision NOT NULL DEFAULT 0 CHECK (duration_s >= 0),
    error              text,
    reference          text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, usage_id)
);
CREATE INDEX llm_usage_month ON llm_usage (tenant_id, created_at);

SELECT palimpsest_tenant_table('llm_routes');
SELECT palimpsest_tenant_table('llm_budgets');
SELECT palimpsest_tenant_table('llm_usage');

-- ---------------------------------------------------------------- the mechanical doc check

-- Which of the given lexemes occur in some code (not doc) chunk of a snapshot. Like
-- palimpsest_lexical_candidates (migration 0004) it runs as its owner so that the GIN index on
-- code_chunks.lexical can serve @@ under RLS, and applies the tenant predicate itself. Lexemes are
-- code_tokens() output: lower-case letters and digits only; anything else is ignored.
CREATE FUNCTION palimpsest_code_lexemes_present(p_repository uuid, p_snapshot uuid, p_lexemes text[])
RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT l.lexeme
    FROM unnest(p_lexemes[1:5000]) AS l(lexeme)
    WHERE l.lexeme ~ '^[a-z0-9]{1,200}$'
      AND EXISTS (
          SELECT 1 FROM code_chunks c
          WHERE c.tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
            AND c.repository_id = p_repository
            AND c.lexical @@ to_tsquery('simple', l.lexeme)
            AND EXISTS (SELECT 1 FROM code_index_files f
                        WHERE f.tenant_id = c.tenant_id AND f.snapshot_id = p_snapshot
                          AND f.blob_sha = c.blob_sha AND f.kind = 'code'))
$$;
REVOKE ALL ON FUNCTION palimpsest_code_lexemes_present(uuid, uuid, text[]) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_code_lexemes_present(uuid, uuid, text[])
    IS 'app-callable: which lexemes occur in code chunks of a snapshot of the current tenant (doc check).';
