-- LLM usage is accounted to what the tokens were spent on, not to the route that served them
-- (issue 7): embedding a repository's chunks is `index` work, a query embedded for a search is
-- `search`, one embedded for a review is `review`. Routing (llm_routes.feature) is unchanged:
-- `embeddings` still names which model embeds. Rows written before this migration keep
-- `embeddings` (still accepted, so history stays readable and budgets keep counting it).

ALTER TABLE llm_usage DROP CONSTRAINT llm_usage_feature_check;
ALTER TABLE llm_usage ADD CONSTRAINT llm_usage_feature_check
    CHECK (feature IN ('analysis', 'summary', 'review', 'index', 'search', 'rerank', 'embeddings'));
