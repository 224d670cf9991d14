-- Posting blocks: the postings of one (term, class) packed into three arrays, so lexical
-- search reads a common term's chunks in a class as one row instead of one index tuple
-- each (about 0.2 µs a posting: 400,000 of them, one term in the all-staff class at a
-- million chunks, took 90 ms to read). Only (term, class) pairs with many postings are
-- packed (the store's pack_least); the rest are read from the postings as before.
--
-- A block is a copy, made by the store after writes (PostgresStore.pack_postings), and it
-- is read only while it is current: each block records the version of its (term, class)
-- it was packed from, and a search compares it with the version its own snapshot sees.
-- The version counts the postings of the pair that writes have added and removed, summed
-- like the document frequency it sits beside (totals and deltas, migration 7). It only
-- grows: a write that changes a pair's postings adds at least one, so a snapshot that sees
-- the block's version sees no write the block missed. (A block visible to a search was
-- committed before the search's snapshot; every write its packing saw committed before
-- that, so the search sees those writes too, and any other write to the pair would have
-- raised the version.) That is why totals brought to zero now stay: removed, a pair's
-- version would start again from nothing and could meet an old block's.

ALTER TABLE class_terms ADD COLUMN changes bigint NOT NULL DEFAULT 0;
ALTER TABLE class_term_deltas ADD COLUMN changes bigint NOT NULL DEFAULT 0;
DROP INDEX class_terms_empty;
-- The packer's way to the pairs worth packing.
CREATE INDEX class_terms_df ON class_terms (df);

-- Migration 7's counting, now also of the postings each statement adds and removes per
-- (term, class). An update counts only the chunks whose class, terms, frequencies or
-- length changed (compared as rows, as the postings trigger does): the others add and
-- remove the same postings, so leaving them out changes no document frequency either.
CREATE OR REPLACE FUNCTION clearance_count_class_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO class_size_deltas (class_id, chunks, length)
            SELECT class_id, count(*), sum(length) FROM new_rows
            WHERE class_id IS NOT NULL GROUP BY class_id;
        INSERT INTO class_term_deltas (term, class_id, df, changes)
            SELECT t.term, n.class_id, count(*), count(*) FROM new_rows n
            CROSS JOIN unnest(n.terms) AS t (term)
            WHERE n.class_id IS NOT NULL GROUP BY t.term, n.class_id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO class_size_deltas (class_id, chunks, length)
            SELECT class_id, -count(*), -sum(length) FROM old_rows
            WHERE class_id IS NOT NULL GROUP BY class_id;
        INSERT INTO class_term_deltas (term, class_id, df, changes)
            SELECT t.term, o.class_id, -count(*), count(*) FROM old_rows o
            CROSS JOIN unnest(o.terms) AS t (term)
            WHERE o.class_id IS NOT NULL GROUP BY t.term, o.class_id;
    ELSE
        INSERT INTO class_size_deltas (class_id, chunks, length)
            SELECT class_id, sum(chunks), sum(length) FROM (
                SELECT class_id, 1 AS chunks, length FROM new_rows
                UNION ALL SELECT class_id, -1, -length FROM old_rows) r
            WHERE class_id IS NOT NULL GROUP BY class_id
            HAVING sum(chunks) <> 0 OR sum(length) <> 0;
        INSERT INTO class_term_deltas (term, class_id, df, changes)
            SELECT term, class_id, sum(df), count(*) FROM (
                SELECT t.term, n.class_id, 1 AS df
                FROM (SELECT id, class_id, terms, tfs, length FROM new_rows
                      EXCEPT SELECT id, class_id, terms, tfs, length FROM old_rows) n
                CROSS JOIN unnest(n.terms) AS t (term)
                UNION ALL SELECT t.term, o.class_id, -1
                FROM (SELECT id, class_id, terms, tfs, length FROM old_rows
                      EXCEPT SELECT id, class_id, terms, tfs, length FROM new_rows) o
                CROSS JOIN unnest(o.terms) AS t (term)) r
            WHERE class_id IS NOT NULL GROUP BY term, class_id;
    END IF;
    RETURN NULL;
END
$$;

-- Migration 7's fold, folding the versions too, and keeping totals that reach zero (see
-- above; a class's size row still goes, as nothing is versioned by it).
CREATE OR REPLACE FUNCTION clearance_fold_class_statistics() RETURNS bigint
LANGUAGE plpgsql AS $$
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
    WITH gone AS (DELETE FROM class_term_deltas RETURNING term, class_id, df, changes)
    INSERT INTO class_terms AS t (term, class_id, df, changes)
        SELECT term, class_id, sum(df), sum(changes) FROM gone GROUP BY term, class_id
        HAVING sum(df) <> 0 OR sum(changes) <> 0 ORDER BY term, class_id
    ON CONFLICT (term, class_id) DO UPDATE
        SET df = t.df + excluded.df, changes = t.changes + excluded.changes;
    GET DIAGNOSTICS terms = ROW_COUNT;
    DELETE FROM class_sizes WHERE chunks = 0 AND length = 0;
    RETURN sizes + terms;
END
$$;

-- Chunk ids (int8), term frequencies and chunk lengths (int4), big-endian as int8send and
-- int4send write them, in chunk order. Stored uncompressed: a search reads them whole.
CREATE TABLE posting_blocks (
    term text NOT NULL,
    class_id integer NOT NULL,
    version bigint NOT NULL,
    postings integer NOT NULL,
    chunks bytea NOT NULL,
    tfs bytea NOT NULL,
    lengths bytea NOT NULL,
    PRIMARY KEY (term, class_id)
);
ALTER TABLE posting_blocks ALTER COLUMN chunks SET STORAGE EXTERNAL,
    ALTER COLUMN tfs SET STORAGE EXTERNAL, ALTER COLUMN lengths SET STORAGE EXTERNAL;

-- Pack the postings of the given (term, class) pairs, one statement a pair, so that each
-- block's postings and version are read in one snapshot. A pair with no postings left
-- loses its block. Returns the postings packed.
CREATE FUNCTION clearance_pack_postings(pack_terms text[], pack_classes integer[])
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    packed bigint := 0;
    written bigint;
BEGIN
    FOR i IN 1 .. coalesce(array_length(pack_terms, 1), 0) LOOP
        INSERT INTO posting_blocks AS b (term, class_id, version, postings, chunks, tfs, lengths)
        SELECT pack_terms[i], pack_classes[i],
            coalesce((SELECT t.changes FROM class_terms t
                      WHERE t.term = pack_terms[i] AND t.class_id = pack_classes[i]), 0)
            + coalesce((SELECT sum(d.changes) FROM class_term_deltas d
                        WHERE d.term = pack_terms[i] AND d.class_id = pack_classes[i]), 0),
            count(*),
            string_agg(int8send(p.chunk), ''::bytea ORDER BY p.chunk),
            string_agg(int4send(p.tf), ''::bytea ORDER BY p.chunk),
            string_agg(int4send(p.length), ''::bytea ORDER BY p.chunk)
        FROM postings p WHERE p.term = pack_terms[i] AND p.class_id = pack_classes[i]
        HAVING count(*) > 0
        ON CONFLICT (term, class_id) DO UPDATE SET version = excluded.version,
            postings = excluded.postings, chunks = excluded.chunks, tfs = excluded.tfs,
            lengths = excluded.lengths
        RETURNING b.postings INTO written;
        IF written IS NULL THEN
            DELETE FROM posting_blocks WHERE term = pack_terms[i] AND class_id = pack_classes[i];
        ELSE
            packed := packed + written;
        END IF;
        written := NULL;
    END LOOP;
    RETURN packed;
END
$$;

-- Emptying the chunks empties the blocks with the postings. (The packer's statement reads
-- the postings, so a TRUNCATE of them waits for it, and it for the TRUNCATE: no block
-- packed before the chunks went outlives them.)
CREATE OR REPLACE FUNCTION clearance_forget_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE postings, posting_blocks;
    RETURN NULL;
END
$$;

-- Every pair of the index as it stands is packed once, with the table held against
-- writes as migrations 7 and 8 hold it.
LOCK TABLE chunks IN SHARE ROW EXCLUSIVE MODE;
SELECT clearance_pack_postings(array_agg(term), array_agg(class_id))
    FROM class_terms WHERE df >= 256;

-- The reading role sees the blocks of the classes it reads whole, as their postings.
ALTER TABLE posting_blocks ENABLE ROW LEVEL SECURITY;
ALTER TABLE posting_blocks FORCE ROW LEVEL SECURITY;
CREATE POLICY posting_blocks_owner ON posting_blocks TO CURRENT_USER
    USING (true) WITH CHECK (true);
CREATE POLICY posting_blocks_reader ON posting_blocks FOR SELECT USING (
    class_id IN (SELECT id FROM readable_classes));
