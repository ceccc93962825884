-- Web view sessions that end (issue 52): a /ui session is a row here, named by a random id sealed
-- in the cookie together with the signed-in token's sha256. Signing out deletes the row, so a copy
-- of the cookie taken before stops working; revoking or rotating a tenant token deletes its
-- sessions; a tenant's deletion takes its sessions with it (cascade); expired rows are pruned.
--
-- tenant_id NULL is an operator session (the admin token is no tenant's). Forced row-level
-- security: a tenant transaction sees and writes only its tenant's sessions; a system transaction
-- (no app.tenant_id) only the operator's — never a tenant's. The owner reads across both only in
-- palimpsest_prune_ui_sessions.

CREATE TABLE ui_sessions (
    session_id  uuid PRIMARY KEY,
    tenant_id   uuid REFERENCES tenants (tenant_id) ON DELETE CASCADE,  -- NULL: an operator session
    token_hash  bytea NOT NULL,  -- sha256 of the signed-in token
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX ui_sessions_token ON ui_sessions (tenant_id, token_hash);
CREATE INDEX ui_sessions_expires ON ui_sessions (expires_at);

ALTER TABLE ui_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE ui_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_or_operator ON ui_sessions
    USING (CASE WHEN NULLIF(current_setting('app.tenant_id', true), '') IS NULL THEN tenant_id IS NULL
                ELSE tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid END)
    WITH CHECK (CASE WHEN NULLIF(current_setting('app.tenant_id', true), '') IS NULL THEN tenant_id IS NULL
                     ELSE tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid END);

DO $$
BEGIN
    EXECUTE format('CREATE POLICY owner_session_pruning ON ui_sessions FOR ALL TO %I USING (true)', current_user);
END $$;

-- Expired sessions of every tenant, and operator sessions of an admin token no longer in use
-- (p_operator_hash: the current one's sha256, NULL when there is none); returns how many.
CREATE FUNCTION palimpsest_prune_ui_sessions(p_operator_hash bytea)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
AS $$
    WITH gone AS (
        DELETE FROM ui_sessions s
        WHERE s.expires_at <= now()
           OR (s.tenant_id IS NULL AND s.token_hash IS DISTINCT FROM p_operator_hash)
        RETURNING 1
    )
    SELECT count(*) FROM gone
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION palimpsest_prune_ui_sessions(bytea) SET search_path = %I, pg_temp', current_schema());
    REVOKE ALL ON FUNCTION palimpsest_prune_ui_sessions(bytea) FROM PUBLIC;
END $$;
COMMENT ON FUNCTION palimpsest_prune_ui_sessions(bytea) IS
    'app-callable: delete expired web sessions and those of a replaced operator token.';
