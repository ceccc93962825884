-- Admin links and organisation-wide pattern repositories (ADR-0017 D8, issue 19).
--
-- Beside the links a repository declares in its own .palimpsest/config.yml, a token with the
-- `manage` scope may link repositories of the tenant through the API: `linked` (source → target:
-- the target's definitions and usages are context for the source's reviews) and `pattern` (the
-- target is an exemplar). A pattern link without a source is organisation-wide: every repository
-- of the tenant gets it. The reviewer applies the same visibility rules (D9) and limits (D10) to
-- both kinds. A link goes with either of its repositories (cascade).

CREATE TABLE repository_links (
    tenant_id      uuid NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    link_id        uuid NOT NULL,
    source_id      uuid,           -- NULL: every repository of the tenant (pattern links only)
    target_id      uuid NOT NULL,
    role           text NOT NULL CHECK (role IN ('linked', 'pattern')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, link_id),
    FOREIGN KEY (tenant_id, source_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, target_id) REFERENCES repositories (tenant_id, repository_id) ON DELETE CASCADE,
    CONSTRAINT repository_links_source CHECK (role = 'pattern' OR source_id IS NOT NULL),
    CONSTRAINT repository_links_not_self CHECK (source_id IS NULL OR source_id <> target_id),
    CONSTRAINT repository_links_once UNIQUE NULLS NOT DISTINCT (tenant_id, source_id, target_id, role)
);
CREATE INDEX repository_links_target ON repository_links (tenant_id, target_id);
SELECT palimpsest_tenant_table('repository_links');
