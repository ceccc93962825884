-- Operating Palimpsest for a whole organisation (issue 19): scoped API tokens, tenant and
-- installation suspension, tenant deletion, and the audit log.
--
-- api_tokens   scopes ('read', 'review', 'manage'), an optional expiry, when it was last used,
--              when it was revoked (a revoked token stays listed) and rotated. Tokens issued before
--              this migration keep what they could do: every scope.
-- tenants      suspended_at (not indexed, not reviewed, not linked context) and deleting_at (set
--              first by a deletion: from then on the tenant's tokens and webhooks are refused, and
--              a retried deletion finishes the job).
-- installations suspended_at and why (the provider's 'installation suspend' event, or the API).
-- audit_log    every admin action: who (token id and name, or the operator), what, when, outcome.

ALTER TABLE api_tokens
    ADD COLUMN scopes text[] NOT NULL DEFAULT ARRAY['read', 'review', 'manage'],
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN last_used_at timestamptz,
    ADD COLUMN revoked_at timestamptz,
    ADD COLUMN rotated_at timestamptz;
ALTER TABLE api_tokens ALTER COLUMN scopes SET DEFAULT ARRAY['read'];
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scopes CHECK (
    cardinality(scopes) BETWEEN 1 AND 3 AND scopes <@ ARRAY['read', 'review', 'manage']
);

ALTER TABLE tenants
    ADD COLUMN suspended_at timestamptz,
    ADD COLUMN deleting_at timestamptz;

ALTER TABLE installations
    ADD COLUMN suspended_at timestamptz,
    ADD COLUMN suspended_reason text CHECK (length(suspended_reason) <= 200);

CREATE TABLE audit_log (
    tenant_id    uuid NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    id           uuid NOT NULL,  -- UUIDv7: orders entries by time
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor        text NOT NULL CHECK (actor IN ('operator', 'token', 'provider')),
    token_id     uuid,           -- the API token (kept after the token is revoked)
    token_name   text CHECK (length(token_name) <= 200),
    action       text NOT NULL CHECK (length(action) BETWEEN 1 AND 200),
    method       text CHECK (length(method) <= 10),
    route        text CHECK (length(route) <= 500),
    target       jsonb NOT NULL DEFAULT '{}'::jsonb,  -- the ids the action named (never a body)
    outcome      text NOT NULL CHECK (outcome IN ('ok', 'denied', 'failed')),
    http_status  integer,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_at ON audit_log (at);
SELECT palimpsest_tenant_table('audit_log');

-- ---------------------------------------------------------------- cross-tenant lookups

DO $$
BEGIN
    EXECUTE format('CREATE POLICY owner_tenant_lookup ON tenants FOR SELECT TO %I USING (true)', current_user);
    EXECUTE format('CREATE POLICY owner_audit_pruning ON audit_log FOR ALL TO %I USING (true)', current_user);
END $$;

-- The token's tenant, what it may do and whether it still may: the caller checks expiry,
-- revocation and the tenant's state (a deleting tenant's tokens are refused).
DROP FUNCTION palimpsest_token_tenant(bytea);
CREATE FUNCTION palimpsest_token_tenant(p_token_hash bytea)
RETURNS TABLE (tenant_id uuid, token_id uuid, name text, scopes text[], expires_at timestamptz,
               revoked_at timestamptz, tenant_suspended boolean, tenant_deleting boolean)
LANGUAGE sql STABLE SECURITY DEFINER
AS $$
    SELECT t.tenant_id, t.token_id, t.name, t.scopes, t.expires_at, t.revoked_at,
           n.suspended_at IS NOT NULL, n.deleting_at IS NOT NULL
    FROM api_tokens t JOIN tenants n ON n.tenant_id = t.tenant_id
    WHERE t.token_hash = p_token_hash
$$;

-- The webhook route gains why its deliveries are ignored (a suspended installation or tenant, a
-- tenant being deleted), so the hot path learns it with the route it already looks up (and caches).
DROP FUNCTION palimpsest_webhook_route(text, text, text, text);
CREATE FUNCTION palimpsest_webhook_route(p_provider text, p_kind text, p_external_id text, p_path text)
RETURNS TABLE (tenant_id uuid, installation_id uuid, webhook_secret bytea, suspended text)
LANGUAGE sql STABLE SECURITY DEFINER
AS $$
    SELECT found.tenant_id, found.installation_id, found.webhook_secret,
           CASE WHEN n.deleting_at IS NOT NULL THEN 'tenant being deleted'
                WHEN n.suspended_at IS NOT NULL THEN 'tenant suspended'
                WHEN found.suspended_at IS NOT NULL THEN 'installation suspended' END
    FROM (
        SELECT i.tenant_id, i.installation_id, i.webhook_secret, i.suspended_at, 0 AS rank, 0 AS len
        FROM installations i
        WHERE i.provider = p_provider AND i.kind = p_kind AND i.external_id = p_external_id
          AND i.webhook_secret IS NOT NULL
        UNION ALL
        SELECT i.tenant_id, i.installation_id, i.webhook_secret, i.suspended_at, 1 AS rank,
               length(i.namespace) AS len
        FROM installations i
        WHERE p_provider = 'gitlab' AND p_kind = 'project' AND p_path IS NOT NULL
          AND i.provider = 'gitlab' AND i.kind = 'group' AND i.namespace IS NOT NULL
          AND i.webhook_secret IS NOT NULL
          AND left(p_path, length(i.namespace) + 1) = i.namespace || '/'
    ) AS found
    JOIN tenants n ON n.tenant_id = found.tenant_id
    ORDER BY found.rank, found.len DESC
    LIMIT 1
$$;

-- Every tenant, for the operator's list (names and state only; details come per tenant).
CREATE FUNCTION palimpsest_tenant_list()
RETURNS TABLE (tenant_id uuid, name text, created_at timestamptz, suspended_at timestamptz,
               deleting_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
AS $$
    SELECT n.tenant_id, n.name, n.created_at, n.suspended_at, n.deleting_at
    FROM tenants n ORDER BY n.created_at, n.tenant_id
$$;

-- Audit retention: delete up to p_limit entries older than p_before; returns how many.
CREATE FUNCTION palimpsest_prune_audit(p_before timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
AS $$
    WITH doomed AS (
        SELECT a.tenant_id, a.id FROM audit_log a WHERE a.at < p_before ORDER BY a.at LIMIT p_limit
    ), gone AS (
        DELETE FROM audit_log a USING doomed
        WHERE a.tenant_id = doomed.tenant_id AND a.id = doomed.id
        RETURNING 1
    )
    SELECT count(*) FROM gone
$$;

DO $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY[
        'palimpsest_webhook_route(text, text, text, text)',
        'palimpsest_token_tenant(bytea)',
        'palimpsest_tenant_list()',
        'palimpsest_prune_audit(timestamptz, integer)'
    ] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', fn, current_schema());
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', fn);
    END LOOP;
END $$;

COMMENT ON FUNCTION palimpsest_webhook_route(text, text, text, text) IS
    'app-callable: the tenant, installation, encrypted webhook secret and suspension of one webhook sender.';
COMMENT ON FUNCTION palimpsest_token_tenant(bytea) IS
    'app-callable: the tenant, scopes and state of an API token, by its sha256.';
COMMENT ON FUNCTION palimpsest_tenant_list() IS
    'app-callable: every tenant''s id, name and state (the operator''s tenant list).';
COMMENT ON FUNCTION palimpsest_prune_audit(timestamptz, integer) IS
    'app-callable: audit retention (deletes old audit entries of every tenant).';
