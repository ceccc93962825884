-- Why each context item is there (issue 16): the evidence of every source that found its file —
-- "changed together with X in 7 commits", "mentions `foo` (changed in this diff)", "tests X",
-- "defines bar" — stored with the item, so the API, `palimpsest review --json` and the prompt all
-- say it. NULL: stored before this migration.
ALTER TABLE review_context ADD COLUMN reason text CHECK (reason IS NULL OR length(reason) <= 2000);
