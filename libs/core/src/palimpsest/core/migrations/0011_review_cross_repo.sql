-- Cross-repository review context (DESIGN §5 "Reviewer").
--
-- review_context.source   gains 'linked' and 'pattern': chunks from other repositories of the tenant
--                         that the base commit's .palimpsest/config.yml links to
-- review_context.repository  the full name of that other repository (NULL: the PR's own repository);
--                         a name, not a key, so the stored review still says where a chunk came from
--                         after that repository is renamed or deleted
--
-- review_context stays a tenant table under forced RLS (0009); adding a column changes nothing there.

ALTER TABLE review_context ADD COLUMN repository text CHECK (length(repository) BETWEEN 1 AND 1000);
ALTER TABLE review_context DROP CONSTRAINT review_context_source_check;
ALTER TABLE review_context ADD CONSTRAINT review_context_source_check CHECK (
    source IN ('definitions', 'usage', 'related', 'neighbourhood', 'cochange', 'linked', 'pattern')
);
ALTER TABLE review_context ADD CONSTRAINT review_context_cross_repo_named CHECK (
    (source IN ('linked', 'pattern')) = (repository IS NOT NULL)
);
