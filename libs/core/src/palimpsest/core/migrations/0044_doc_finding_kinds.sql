-- Two more documentation finding kinds (issue 38):
--   broken_link       a relative link or image in a doc whose target is not in the tree and never was
--                     in history (a target that existed once is missing_path, with its evidence);
--   versioned_manual  a manual kept for an older major release (docs/v1/ beside docs/v2/), reported
--                     once as a whole with how many of its claims no longer hold at head, never line
--                     by line.
ALTER TABLE doc_findings DROP CONSTRAINT doc_findings_kind_check;
ALTER TABLE doc_findings ADD CONSTRAINT doc_findings_kind_check CHECK (
    kind IN ('missing_identifier', 'missing_path', 'unmatched_governs', 'stale_doc', 'broken_link',
             'versioned_manual')
);
