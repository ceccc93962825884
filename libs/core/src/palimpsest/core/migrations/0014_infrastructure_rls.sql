-- Row-level security on the infrastructure tables that carry a tenant (found by the chaos soak:
-- a transaction of tenant A could read tenant B's events in the outbox and inbox).
--
-- The outbox relay, the consumer runtime's bookkeeping, the dead-letter recorder and the analysis
-- scheduler read these tables across tenants, in a *system* transaction (no `app.tenant_id` set;
-- see palimpsest.core.db.system_tx). A *tenant* transaction sees and writes only its own tenant's
-- rows. So: system → every row; tenant → its rows. Forced, so the owner obeys it too.

CREATE FUNCTION palimpsest_infrastructure_table(tbl regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', tbl);
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', tbl);
    EXECUTE format(
        'CREATE POLICY system_or_tenant ON %s '
        'USING (NULLIF(current_setting(''app.tenant_id'', true), '''') IS NULL '
        '       OR tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid) '
        'WITH CHECK (NULLIF(current_setting(''app.tenant_id'', true), '''') IS NULL '
        '       OR tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid)',
        tbl);
END $$;
REVOKE ALL ON FUNCTION palimpsest_infrastructure_table(regclass) FROM PUBLIC;

SELECT palimpsest_infrastructure_table('outbox');
SELECT palimpsest_infrastructure_table('inbox');
SELECT palimpsest_infrastructure_table('event_failures');
SELECT palimpsest_infrastructure_table('dead_letters');
SELECT palimpsest_infrastructure_table('analysis_schedule');
