-- Postings: one row per (term, chunk), with the term's frequency in the chunk and the
-- chunk's length, keyed by term and permission class. Lexical search for a caller who reads
-- whole classes scores from here: an index-only range per (term, class) instead of each
-- matching chunk's row, which holds its text, terms and vector (about 5 kB; scoring the
-- widest caller's matches at 100,000 chunks read 47,000 pages of them, 850 ms).
--
-- Kept by statement triggers on `chunks` in the statement that writes the chunks: a chunk
-- written adds its postings, a chunk deleted removes them, and an update that moves a chunk
-- to another class (a permission change) or changes its terms moves or rewrites them.

CREATE TABLE postings (
    term text NOT NULL,
    class_id integer NOT NULL,
    chunk bigint NOT NULL,
    tf integer NOT NULL,
    length integer NOT NULL
);

-- Counted with the table held against writes until the triggers below take over.
LOCK TABLE chunks IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO postings (term, class_id, chunk, tf, length)
    SELECT u.term, c.class_id, c.id, u.tf, c.length FROM chunks c
    CROSS JOIN unnest(c.terms, c.tfs) AS u (term, tf)
    WHERE c.class_id IS NOT NULL
    ORDER BY 1, 2, 3;
-- The search reads (term, class) ranges from the first index alone (unique: a posting is
-- counted once); the second finds a chunk's postings when it is deleted or moved.
CREATE UNIQUE INDEX postings_term ON postings (term, class_id, chunk) INCLUDE (tf, length);
CREATE INDEX postings_chunk ON postings (chunk);
ANALYZE postings;

CREATE FUNCTION clearance_post_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO postings (term, class_id, chunk, tf, length)
            SELECT u.term, n.class_id, n.id, u.tf, n.length FROM new_rows n
            CROSS JOIN unnest(n.terms, n.tfs) AS u (term, tf)
            WHERE n.class_id IS NOT NULL;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM postings WHERE chunk = ANY (ARRAY(SELECT id FROM old_rows));
    ELSE
        -- Only the chunks whose id, class, terms or length changed (a new embedding:
        -- none), compared as rows rather than paired by id: their postings are removed
        -- by the old rows' ids and written again from the new rows.
        DELETE FROM postings WHERE chunk = ANY (ARRAY(
            SELECT id FROM (SELECT id, class_id, terms, tfs, length FROM old_rows
                            EXCEPT SELECT id, class_id, terms, tfs, length FROM new_rows) o));
        INSERT INTO postings (term, class_id, chunk, tf, length)
            SELECT u.term, n.class_id, n.id, u.tf, n.length
            FROM (SELECT id, class_id, terms, tfs, length FROM new_rows
                  EXCEPT SELECT id, class_id, terms, tfs, length FROM old_rows) n
            CROSS JOIN unnest(n.terms, n.tfs) AS u (term, tf)
            WHERE n.class_id IS NOT NULL;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER chunks_posted AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clearance_post_chunks();
CREATE TRIGGER chunks_unposted AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clearance_post_chunks();
CREATE TRIGGER chunks_reposted AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clearance_post_chunks();

CREATE FUNCTION clearance_forget_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE postings;
    RETURN NULL;
END
$$;
CREATE TRIGGER chunks_emptied_of_postings AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION clearance_forget_postings();

-- The reading role sees the postings of the classes it reads whole, as their counts.
ALTER TABLE postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE postings FORCE ROW LEVEL SECURITY;
CREATE POLICY postings_owner ON postings TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY postings_reader ON postings FOR SELECT USING (
    class_id IN (SELECT id FROM readable_classes));
