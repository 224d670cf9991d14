-- BM25's statistics per permission class: how many chunks a class holds, their summed
-- length, and in how many of them each term occurs. A caller's N, average length and
-- document frequencies are these summed over the classes the caller's filter admits: the
-- same integers as counting the caller's chunks, read from a row per class and term
-- instead of from every chunk that holds a query word (docs/search.md).
--
-- Writers only append: the statement triggers below add one row per class (and per class
-- and term) that a statement changed to the *_deltas tables, so two writers never wait on
-- one statistics row. The store folds the deltas into the totals now and then
-- (clearance_fold_class_statistics), deleting what it folded in the statement that adds
-- it. A search reads totals and deltas in one snapshot: every committed write once.

CREATE TABLE class_sizes (
    class_id integer PRIMARY KEY,
    chunks bigint NOT NULL,
    length bigint NOT NULL
);
CREATE TABLE class_size_deltas (
    class_id integer NOT NULL,
    chunks bigint NOT NULL,
    length bigint NOT NULL
);
CREATE INDEX class_size_deltas_class ON class_size_deltas (class_id);

CREATE TABLE class_terms (
    term text NOT NULL,
    class_id integer NOT NULL,
    df bigint NOT NULL,
    PRIMARY KEY (term, class_id)
);
-- Totals a fold brought to zero, found without reading every row.
CREATE INDEX class_terms_empty ON class_terms (term) WHERE df = 0;
CREATE TABLE class_term_deltas (
    term text NOT NULL,
    class_id integer NOT NULL,
    df bigint NOT NULL
);
CREATE INDEX class_term_deltas_term ON class_term_deltas (term, class_id);

-- Counted with the table held against writes until the triggers below take over, so a
-- writer of an older release still running cannot commit chunks between the two.
LOCK TABLE chunks IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO class_sizes (class_id, chunks, length)
    SELECT class_id, count(*), sum(length) FROM chunks
    WHERE class_id IS NOT NULL GROUP BY class_id;
INSERT INTO class_terms (term, class_id, df)
    SELECT t.term, c.class_id, count(*) FROM chunks c CROSS JOIN unnest(c.terms) AS t (term)
    WHERE c.class_id IS NOT NULL GROUP BY t.term, c.class_id;

-- A statement's net change per class and term: chunks written count up, chunks deleted
-- count down, and an update counts its rows' old values down and new ones up, so one that
-- moves chunks to another class (a permission change) moves their counts with them and
-- one that changes neither class nor terms (a new embedding) writes nothing. A chunk's
-- terms are distinct, so each counts once towards a term's document frequency.
CREATE FUNCTION clearance_count_class_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO class_size_deltas (class_id, chunks, length)
            SELECT class_id, count(*), sum(length) FROM new_rows
            WHERE class_id IS NOT NULL GROUP BY class_id;
        INSERT INTO class_term_deltas (term, class_id, df)
            SELECT t.term, n.class_id, count(*) FROM new_rows n
            CROSS JOIN unnest(n.terms) AS t (term)
            WHERE n.class_id IS NOT NULL GROUP BY t.term, n.class_id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO class_size_deltas (class_id, chunks, length)
            SELECT class_id, -count(*), -sum(length) FROM old_rows
            WHERE class_id IS NOT NULL GROUP BY class_id;
        INSERT INTO class_term_deltas (term, class_id, df)
            SELECT t.term, o.class_id, -count(*) FROM old_rows o
            CROSS JOIN unnest(o.terms) AS t (term)
            WHERE o.class_id IS NOT NULL GROUP BY t.term, o.class_id;
    ELSE
        INSERT INTO class_size_deltas (class_id, chunks, length)
            SELECT class_id, sum(chunks), sum(length) FROM (
                SELECT class_id, 1 AS chunks, length FROM new_rows
                UNION ALL SELECT class_id, -1, -length FROM old_rows) r
            WHERE class_id IS NOT NULL GROUP BY class_id
            HAVING sum(chunks) <> 0 OR sum(length) <> 0;
        INSERT INTO class_term_deltas (term, class_id, df)
            SELECT term, class_id, sum(df) FROM (
                SELECT t.term, n.class_id, 1 AS df FROM new_rows n
                CROSS JOIN unnest(n.terms) AS t (term)
                UNION ALL SELECT t.term, o.class_id, -1 FROM old_rows o
                CROSS JOIN unnest(o.terms) AS t (term)) r
            WHERE class_id IS NOT NULL GROUP BY term, class_id HAVING sum(df) <> 0;
    END IF;
    RETURN NULL;
END
$$;
-- (A trigger with transition tables serves one event.)
CREATE TRIGGER chunks_counted_in AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clearance_count_class_rows();
CREATE TRIGGER chunks_counted_out AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clearance_count_class_rows();
CREATE TRIGGER chunks_counted_again AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clearance_count_class_rows();

CREATE FUNCTION clearance_forget_class_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- After any fold under way (its lock): totals it adds must not outlive the chunks.
    PERFORM pg_advisory_xact_lock(74132836413954);
    DELETE FROM class_sizes;
    DELETE FROM class_size_deltas;
    DELETE FROM class_terms;
    DELETE FROM class_term_deltas;
    RETURN NULL;
END
$$;
CREATE TRIGGER chunks_emptied AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION clearance_forget_class_rows();

-- Fold the deltas into the totals: each statement deletes the deltas its snapshot sees and
-- adds their sums, so a delta committed meanwhile stays for the next fold, and a reader
-- sees every delta either as itself or in a total, never both. Totals that reach zero go.
-- One fold at a time (the second returns NULL at once); returns the rows folded.
CREATE FUNCTION clearance_fold_class_statistics() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    sizes bigint;
    terms bigint;
BEGIN
    -- 0x436C_6561_7202, beside the store's other advisory locks
    IF NOT pg_try_advisory_xact_lock(74132836413954) THEN
        RETURN NULL;
    END IF;
    WITH gone AS (DELETE FROM class_size_deltas RETURNING class_id, chunks, length)
    INSERT INTO class_sizes AS s (class_id, chunks, length)
        SELECT class_id, sum(chunks), sum(length) FROM gone GROUP BY class_id ORDER BY class_id
    ON CONFLICT (class_id) DO UPDATE
        SET chunks = s.chunks + excluded.chunks, length = s.length + excluded.length;
    GET DIAGNOSTICS sizes = ROW_COUNT;
    WITH gone AS (DELETE FROM class_term_deltas RETURNING term, class_id, df)
    INSERT INTO class_terms AS t (term, class_id, df)
        SELECT term, class_id, sum(df) FROM gone GROUP BY term, class_id
        HAVING sum(df) <> 0 ORDER BY term, class_id
    ON CONFLICT (term, class_id) DO UPDATE SET df = t.df + excluded.df;
    GET DIAGNOSTICS terms = ROW_COUNT;
    DELETE FROM class_terms WHERE df = 0;
    DELETE FROM class_sizes WHERE chunks = 0 AND length = 0;
    RETURN sizes + terms;
END
$$;

-- The classes every chunk of which the caller may read: readable_classes also asks for the
-- chunks' own sensitivity, which the chunks' policy checked on the row. The statistics'
-- row policies below admit a class's rows only for such a caller, so the reading role
-- cannot count the terms of a class it may not read.
CREATE OR REPLACE VIEW readable_classes WITH (security_invoker = true) AS
    SELECT c.id FROM access_classes c
    WHERE c.acl && (SELECT clearance_principals())
      AND c.doc_sensitivity BETWEEN 0 AND (SELECT clearance_ceiling())
      AND c.sensitivity BETWEEN 0 AND (SELECT clearance_ceiling())
      AND c.corpus IN (SELECT clearance_fresh_corpora());

ALTER TABLE class_sizes ENABLE ROW LEVEL SECURITY;
ALTER TABLE class_sizes FORCE ROW LEVEL SECURITY;
CREATE POLICY class_sizes_owner ON class_sizes TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY class_sizes_reader ON class_sizes FOR SELECT USING (
    class_id IN (SELECT id FROM readable_classes));

ALTER TABLE class_size_deltas ENABLE ROW LEVEL SECURITY;
ALTER TABLE class_size_deltas FORCE ROW LEVEL SECURITY;
CREATE POLICY class_size_deltas_owner ON class_size_deltas TO CURRENT_USER
    USING (true) WITH CHECK (true);
CREATE POLICY class_size_deltas_reader ON class_size_deltas FOR SELECT USING (
    class_id IN (SELECT id FROM readable_classes));

ALTER TABLE class_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE class_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY class_terms_owner ON class_terms TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY class_terms_reader ON class_terms FOR SELECT USING (
    class_id IN (SELECT id FROM readable_classes));

ALTER TABLE class_term_deltas ENABLE ROW LEVEL SECURITY;
ALTER TABLE class_term_deltas FORCE ROW LEVEL SECURITY;
CREATE POLICY class_term_deltas_owner ON class_term_deltas TO CURRENT_USER
    USING (true) WITH CHECK (true);
CREATE POLICY class_term_deltas_reader ON class_term_deltas FOR SELECT USING (
    class_id IN (SELECT id FROM readable_classes));
