-- Which of the given identifiers occur, exactly (case and word boundaries), in some code chunk of
-- a snapshot. The documentation check first asks palimpsest_code_lexemes_present (0008), whose
-- lexemes fold case and join words: `useCompressor` and `local_stack` answer for `UseCompressor`
-- and `LocalStack`, so a renamed definition whose old name lives on in another spelling was taken
-- for current. This confirms each such name by a case-sensitive whole-word match on the chunks the
-- lexeme selects (the GIN index narrows them first). Like 0008 it runs as its owner so that the
-- index can serve @@ under RLS, and applies the tenant predicate itself. Names are identifiers
-- (letters, digits, _ and $); lexemes are code_tokens() output; anything else is ignored.
CREATE FUNCTION palimpsest_code_names_present(
    p_repository uuid, p_snapshot uuid, p_names text[], p_lexemes text[]
)
RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT n.name
    FROM unnest(p_names[1:5000], p_lexemes[1:5000]) AS n(name, lexeme)
    WHERE n.name ~ '^[A-Za-z_$][A-Za-z0-9_$]{0,199}$'
      AND n.lexeme ~ '^[a-z0-9]{1,200}$'
      AND EXISTS (
          SELECT 1 FROM code_chunks c
          WHERE c.tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid
            AND c.repository_id = p_repository
            AND c.lexical @@ to_tsquery('simple', n.lexeme)
            AND c.content ~ ('(^|[^A-Za-z0-9_$])' || replace(n.name, '$', '\$') || '($|[^A-Za-z0-9_$])')
            AND EXISTS (SELECT 1 FROM code_index_files f
                        WHERE f.tenant_id = c.tenant_id AND f.snapshot_id = p_snapshot
                          AND f.blob_sha = c.blob_sha AND f.kind = 'code'))
$$;
REVOKE ALL ON FUNCTION palimpsest_code_names_present(uuid, uuid, text[], text[]) FROM PUBLIC;
COMMENT ON FUNCTION palimpsest_code_names_present(uuid, uuid, text[], text[])
    IS 'app-callable: which identifiers occur exactly in code chunks of a snapshot of the current tenant (doc check).';
