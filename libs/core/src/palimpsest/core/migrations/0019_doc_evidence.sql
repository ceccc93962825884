-- Documentation findings carry their proof from git history (issue 17): the commit at which the
-- named path or definition last existed in the code, the commit that removed it (and their
-- dates), what that commit made of it when it renamed or moved it, and the commit and date that
-- last wrote the doc line (so a reader sees whether the claim was true when written). Stale-doc
-- findings have no evidence (NULL); they are dated by the file's last change.
ALTER TABLE doc_findings ADD COLUMN evidence jsonb
    CHECK (evidence IS NULL OR jsonb_typeof(evidence) = 'object');
