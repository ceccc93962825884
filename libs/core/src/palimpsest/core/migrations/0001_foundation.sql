-- Foundation: tenants, repositories, and the bus's infrastructure tables.
--
-- Tenant tables: tenant_id leads the key, ENABLE + FORCE ROW LEVEL SECURITY, and one policy that
-- compares tenant_id with the transaction-local setting app.tenant_id ('' after a local setting
-- ends, hence NULLIF). Infrastructure tables carry a COMMENT starting with 'infrastructure:'; the
-- RLS test discovers every other table with a tenant_id column from the catalog.

CREATE TABLE tenants (
    tenant_id   uuid PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE repositories (
    tenant_id       uuid NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    repository_id   uuid NOT NULL,
    provider        text NOT NULL CHECK (provider IN ('github', 'gitlab', 'bitbucket', 'local')),
    external_id     text,
    full_name       text NOT NULL,
    clone_url       text NOT NULL,
    default_branch  text NOT NULL DEFAULT 'main',
    visibility      text NOT NULL DEFAULT 'private' CHECK (visibility IN ('public', 'private', 'internal')),
    index_mode      text NOT NULL DEFAULT 'lexical' CHECK (index_mode IN ('off', 'lexical', 'hybrid')),
    installation_id uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, repository_id)
);
CREATE UNIQUE INDEX repositories_clone_url ON repositories (tenant_id, clone_url);

-- ---------------------------------------------------------------- infrastructure

CREATE TABLE outbox (
    id            uuid PRIMARY KEY,
    tenant_id     uuid,
    subject       text NOT NULL,
    type          text NOT NULL,
    payload       jsonb NOT NULL,
    headers       jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    published_at  timestamptz,
    attempts      integer NOT NULL DEFAULT 0,
    last_error    text
);
CREATE INDEX outbox_unpublished ON outbox (created_at) WHERE published_at IS NULL;
CREATE INDEX outbox_published ON outbox (published_at) WHERE published_at IS NOT NULL;
COMMENT ON TABLE outbox IS 'infrastructure: events written in the state change''s transaction; the relay publishes them to JetStream. Read by the relay across tenants, so no RLS; services write rows only through palimpsest.core.outbox.';

CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('palimpsest_outbox', '');
    RETURN NULL;
END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

CREATE TABLE inbox (
    consumer      text NOT NULL,
    event_id      uuid NOT NULL,
    tenant_id     uuid,
    event_type    text NOT NULL,
    processed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (consumer, event_id)
);
CREATE INDEX inbox_processed_at ON inbox (processed_at);
COMMENT ON TABLE inbox IS 'infrastructure: (consumer, event_id) recorded in the same transaction as the consumer''s work, so a redelivered event is acknowledged without being applied twice.';

CREATE TABLE event_failures (
    consumer    text NOT NULL,
    event_id    uuid NOT NULL,
    tenant_id   uuid,
    attempts    integer NOT NULL DEFAULT 1,
    last_error  text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (consumer, event_id)
);
COMMENT ON TABLE event_failures IS 'infrastructure: the last handler error per (consumer, event), shown beside dead letters.';

CREATE TABLE dead_letters (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    consumer      text NOT NULL,
    stream_seq    bigint NOT NULL,
    subject       text NOT NULL,
    event_id      uuid,
    tenant_id     uuid,
    event_type    text,
    payload       bytea NOT NULL,
    headers       jsonb NOT NULL DEFAULT '{}'::jsonb,
    deliveries    integer NOT NULL,
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    replayed_at   timestamptz,
    replay_count  integer NOT NULL DEFAULT 0,
    UNIQUE (consumer, stream_seq)
);
COMMENT ON TABLE dead_letters IS 'infrastructure: messages that exhausted max_deliver (from the MAX_DELIVERIES advisory); operators list and replay them.';

-- ---------------------------------------------------------------- tenant tables: RLS

-- One definition of the tenant policy; later migrations call it for each new tenant table.
CREATE FUNCTION palimpsest_tenant_table(tbl regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', tbl);
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', tbl);
    EXECUTE format(
        'CREATE POLICY tenant_isolation ON %s '
        'USING (tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid) '
        'WITH CHECK (tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid)',
        tbl);
END $$;
REVOKE ALL ON FUNCTION palimpsest_tenant_table(regclass) FROM PUBLIC;

SELECT palimpsest_tenant_table('tenants');
SELECT palimpsest_tenant_table('repositories');
