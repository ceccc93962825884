-- What a review was of (issue 52): the pull request's title and author, who asked for the review,
-- and the branch names of its base and head, stored with the review so its page, the reviews list
-- and `palimpsest review show` lead with them instead of sending people to the provider.
--
-- reviews.title         the pull request's title as the request carried it (a local or API review:
--                       the title it was given, '' when none); hostile text, shown escaped
-- reviews.author        the pull request's author as the provider's payload names them; NULL when
--                       it does not (a GitLab event sent by someone else names the author by id only)
-- reviews.requested_by  the login that opened, pushed or commented to ask (NULL: not a provider's)
-- reviews.base_ref      the base branch reviewed against, and the head branch, as named by the
-- reviews.head_ref      request (NULL: it named commits only, or the review predates this migration)
--
-- Rows stored before this migration keep NULL in all five: "not recorded".

ALTER TABLE reviews
    ADD COLUMN title text CHECK (title IS NULL OR length(title) <= 1000),
    ADD COLUMN author text CHECK (author IS NULL OR length(author) <= 200),
    ADD COLUMN requested_by text CHECK (requested_by IS NULL OR length(requested_by) <= 200),
    ADD COLUMN base_ref text CHECK (base_ref IS NULL OR length(base_ref) <= 1000),
    ADD COLUMN head_ref text CHECK (head_ref IS NULL OR length(head_ref) <= 1000);
