-- Resolved code graphs, stored per snapshot (issue 23). The first graph query of a new 50 000-file
-- snapshot resolved it from the facts (~4.6 s), in every process that asked: each reviewer replica,
-- the MCP server, the analyzer; only the reviewer replica that received snapshot.built was warm.
-- The graph is a pure function of the snapshot and of the resolver's code, so it is stored once
-- and loaded anywhere (palimpsest.index.graph.persisted has the payload format).
--
-- resolver  a digest of the resolving code and payload format: a release that resolves otherwise
--           reads no graph an older one stored (it resolves and stores its own, next to it)
-- payload   zlib-compressed already, so PostgreSQL keeps it out of line without compressing it again
--
-- A tenant table under forced RLS; deleted with its snapshot (pruning, a repository's or tenant's
-- deletion) by the foreign key — one row per snapshot, so the per-row cascade costs nothing.

CREATE TABLE code_graphs (
    tenant_id    uuid NOT NULL,
    snapshot_id  uuid NOT NULL,
    resolver     text NOT NULL,
    payload      bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, snapshot_id, resolver),
    FOREIGN KEY (tenant_id, snapshot_id) REFERENCES code_index_snapshots (tenant_id, snapshot_id) ON DELETE CASCADE
);
ALTER TABLE code_graphs ALTER COLUMN payload SET STORAGE EXTERNAL;

SELECT palimpsest_tenant_table('code_graphs');
