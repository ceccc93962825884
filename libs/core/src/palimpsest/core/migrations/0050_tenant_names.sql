-- A tenant's name is unique per installation, letter case aside: a second `palimpsest tenant
-- create northwind` made a second tenant of that name, after which neither could be named
-- (`--tenant northwind`, `tenant show northwind`). Creating a taken name now fails (the API
-- answers 409).
--
-- Rows made before this may already share a name, and the unique index cannot be built over
-- them. Failing the upgrade would leave the operator a schema they cannot migrate; deleting or
-- merging a tenant would lose its data. So the oldest tenant of each name keeps it and every later
-- one is renamed "<name> (<its tenant id>)" (the name cut to fit the 200-character limit): the id
-- makes the new name unique, the tenant and its rows are untouched, ids keep working, and the
-- migration says which tenants it renamed (a NOTICE each). Should a renamed name still be taken
-- (a tenant really called "northwind (<that id>)"), the index fails and the transaction rolls
-- back with nothing changed.
--
-- tenants is under FORCE ROW LEVEL SECURITY, which binds the owner too: lifted for this
-- transaction to see every tenant's row, and restored below.
ALTER TABLE tenants NO FORCE ROW LEVEL SECURITY;

DO $$
DECLARE
    renamed record;
BEGIN
    FOR renamed IN
        WITH ranked AS (
            SELECT tenant_id, name,
                   row_number() OVER (PARTITION BY lower(name) ORDER BY created_at, tenant_id) AS n
            FROM tenants
        )
        UPDATE tenants t SET name = left(r.name, 160) || ' (' || t.tenant_id::text || ')'
        FROM ranked r
        WHERE r.tenant_id = t.tenant_id AND r.n > 1
        RETURNING t.tenant_id, r.name AS old_name, t.name AS new_name
    LOOP
        RAISE NOTICE 'tenant % shared the name %; renamed %', renamed.tenant_id, renamed.old_name, renamed.new_name;
    END LOOP;
END $$;

CREATE UNIQUE INDEX tenants_name_key ON tenants (lower(name));

ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
