-- Ingest: installations (webhook secrets and provider credentials, encrypted by the service with
-- Fernet before they reach this database), hashed per-tenant API tokens, the record of every
-- webhook delivery, and the link from repositories to the installation they came through.
--
-- The webhook endpoint must find an installation (and so its tenant) BEFORE it knows the tenant,
-- and a bearer token must be mapped to its tenant. Both go through narrowly-scoped SECURITY
-- DEFINER functions owned by the migration owner, with a fixed search_path, EXECUTE granted only
-- to the application role (see 'app-callable:' in migrate.py): the application role itself never
-- reads another tenant's rows. Where the owner is not a superuser, FORCE ROW LEVEL SECURITY also
-- binds it, so the functions read through owner-only SELECT policies created below.

CREATE TABLE installations (
    tenant_id         uuid NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    installation_id   uuid NOT NULL,
    provider          text NOT NULL CHECK (provider IN ('github', 'gitlab', 'bitbucket')),
    -- what the provider's deliveries name: a GitHub App installation (or app, repository, org,
    -- business hook target), a GitLab project or group, a Bitbucket workspace
    kind              text NOT NULL CHECK (kind IN ('installation', 'app', 'repository', 'organization',
                                                    'business', 'project', 'group', 'workspace')),
    external_id       text NOT NULL CHECK (length(external_id) BETWEEN 1 AND 1024),
    -- the provider host its repositories live on (github.com, gitlab.example.com): repository URLs
    -- registered through this installation must be https URLs on exactly this host
    host              text NOT NULL CHECK (length(host) BETWEEN 1 AND 253),
    -- GitLab group installations: the group's full path; project deliveries below it match
    namespace         text CHECK (length(namespace) BETWEEN 1 AND 1024),
    display_name      text NOT NULL DEFAULT '' CHECK (length(display_name) <= 200),
    webhook_secret    bytea,  -- Fernet token; NULL: this installation receives no webhooks
    credentials       bytea,  -- Fernet token of an access token or app credentials (JSON)
    credentials_kind  text NOT NULL DEFAULT 'none' CHECK (credentials_kind IN ('none', 'token', 'app')),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, installation_id),
    CONSTRAINT installations_credentials_kind CHECK ((credentials IS NULL) = (credentials_kind = 'none'))
);
-- One webhook sender routes to exactly one installation, whichever tenant owns it.
CREATE UNIQUE INDEX installations_route ON installations (provider, kind, external_id)
    WHERE webhook_secret IS NOT NULL;
CREATE UNIQUE INDEX installations_namespace ON installations (provider, kind, namespace)
    WHERE webhook_secret IS NOT NULL AND namespace IS NOT NULL;

CREATE TABLE api_tokens (
    tenant_id   uuid NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    token_id    uuid NOT NULL,
    token_hash  bytea NOT NULL,  -- sha256 of the token; the token itself is shown once, never stored
    name        text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, token_id)
);
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (token_hash);

CREATE TABLE deliveries (
    tenant_id        uuid NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    id               uuid NOT NULL,  -- UUIDv7: orders deliveries by arrival
    provider         text NOT NULL CHECK (provider IN ('github', 'gitlab', 'bitbucket')),
    installation_id  uuid,
    delivery_id      text NOT NULL CHECK (length(delivery_id) <= 255),  -- the provider's idempotency key
    event            text NOT NULL CHECK (length(event) <= 255),
    action           text CHECK (length(action) <= 255),
    outcome          text NOT NULL CHECK (outcome IN ('accepted', 'duplicate', 'ignored', 'rejected')),
    http_status      integer NOT NULL DEFAULT 202,
    reason           text CHECK (length(reason) <= 1000),
    repository_id    uuid,  -- informational: the repository it was about, when known
    event_ids        uuid[] NOT NULL DEFAULT '{}',
    received_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, installation_id) REFERENCES installations (tenant_id, installation_id)
        ON DELETE SET NULL (installation_id)
);
-- A redelivery reuses its delivery id: only one accepted row per sender and id.
CREATE UNIQUE INDEX deliveries_dedupe ON deliveries (tenant_id, provider, installation_id, delivery_id)
    WHERE outcome = 'accepted';
CREATE INDEX deliveries_repository ON deliveries (tenant_id, repository_id, id) WHERE repository_id IS NOT NULL;
CREATE INDEX deliveries_received_at ON deliveries (received_at);

ALTER TABLE repositories
    ADD CONSTRAINT repositories_installation FOREIGN KEY (tenant_id, installation_id)
        REFERENCES installations (tenant_id, installation_id) ON DELETE SET NULL (installation_id);
CREATE UNIQUE INDEX repositories_external_id ON repositories (tenant_id, provider, external_id)
    WHERE external_id IS NOT NULL;
CREATE INDEX repositories_full_name ON repositories (tenant_id, provider, lower(full_name));
CREATE INDEX repositories_installation_id ON repositories (tenant_id, installation_id)
    WHERE installation_id IS NOT NULL;

SELECT palimpsest_tenant_table('installations');
SELECT palimpsest_tenant_table('api_tokens');
SELECT palimpsest_tenant_table('deliveries');

-- ---------------------------------------------------------------- cross-tenant lookups

-- The owner reads across tenants only inside the functions below (a superuser owner bypasses RLS
-- anyway; these policies make a non-superuser owner work the same way).
DO $$
BEGIN
    EXECUTE format('CREATE POLICY owner_route_lookup ON installations FOR SELECT TO %I USING (true)', current_user);
    EXECUTE format('CREATE POLICY owner_token_lookup ON api_tokens FOR SELECT TO %I USING (true)', current_user);
    EXECUTE format('CREATE POLICY owner_delivery_pruning ON deliveries FOR ALL TO %I USING (true)', current_user);
END $$;

-- Which tenant and installation a webhook sender is, and its encrypted secret — nothing else.
-- An exact (provider, kind, external_id) match wins; a GitLab project delivery otherwise matches
-- the group installation whose namespace is the longest prefix of the project's path.
CREATE FUNCTION palimpsest_webhook_route(p_provider text, p_kind text, p_external_id text, p_path text)
RETURNS TABLE (tenant_id uuid, installation_id uuid, webhook_secret bytea)
LANGUAGE sql STABLE SECURITY DEFINER
AS $$
    SELECT found.tenant_id, found.installation_id, found.webhook_secret
    FROM (
        SELECT i.tenant_id, i.installation_id, i.webhook_secret, 0 AS rank, 0 AS len
        FROM installations i
        WHERE i.provider = p_provider AND i.kind = p_kind AND i.external_id = p_external_id
          AND i.webhook_secret IS NOT NULL
        UNION ALL
        SELECT i.tenant_id, i.installation_id, i.webhook_secret, 1 AS rank, length(i.namespace) AS len
        FROM installations i
        WHERE p_provider = 'gitlab' AND p_kind = 'project' AND p_path IS NOT NULL
          AND i.provider = 'gitlab' AND i.kind = 'group' AND i.namespace IS NOT NULL
          AND i.webhook_secret IS NOT NULL
          AND left(p_path, length(i.namespace) + 1) = i.namespace || '/'
    ) AS found
    ORDER BY found.rank, found.len DESC
    LIMIT 1
$$;

-- The tenant of a bearer token, by the token's sha256.
CREATE FUNCTION palimpsest_token_tenant(p_token_hash bytea)
RETURNS TABLE (tenant_id uuid, token_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER
AS $$
    SELECT t.tenant_id, t.token_id FROM api_tokens t WHERE t.token_hash = p_token_hash
$$;

-- Delivery retention: delete up to p_limit deliveries received before p_before; returns how many.
CREATE FUNCTION palimpsest_prune_deliveries(p_before timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
AS $$
    WITH doomed AS (
        SELECT d.tenant_id, d.id FROM deliveries d WHERE d.received_at < p_before
        ORDER BY d.received_at LIMIT p_limit
    ), gone AS (
        DELETE FROM deliveries d USING doomed
        WHERE d.tenant_id = doomed.tenant_id AND d.id = doomed.id
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
        'palimpsest_prune_deliveries(timestamptz, integer)'
    ] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', fn, current_schema());
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', fn);
    END LOOP;
END $$;

COMMENT ON FUNCTION palimpsest_webhook_route(text, text, text, text) IS
    'app-callable: the tenant, installation and encrypted webhook secret of one webhook sender.';
COMMENT ON FUNCTION palimpsest_token_tenant(bytea) IS
    'app-callable: the tenant of an API token, by its sha256.';
COMMENT ON FUNCTION palimpsest_prune_deliveries(timestamptz, integer) IS
    'app-callable: delivery retention (deletes old delivery records of every tenant).';
