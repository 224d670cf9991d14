-- Posting blocks in fewer bytes. A lexical search reads its terms' blocks whole: at a
-- million chunks the widest caller read 5.4 MB of them a query (the median) as migration 9
-- packed them, 16 bytes a posting, and the blocks took about 1 GB.
--
-- Each of a block's three columns now holds one unsigned big-endian integer a posting, in
-- chunk order, all of one width: the least of 1, 2, 4 and 8 bytes that holds the largest
-- of them. A column's width is its bytes over the block's postings. The chunk column holds
-- each chunk id less the one before it (the first's, 0: `first_chunk` holds that id). The
-- others hold the term's frequency in the chunk and the chunk's length, as before. The
-- common terms of a large class come to 4 or 5 bytes a posting: gaps and lengths of two
-- bytes, frequencies of one.
--
-- Versions are as migration 9 made them. Every block is packed again below, with the chunks
-- held against writes as migration 9 held them (taken first: emptying the chunks locks them
-- before the blocks, too).

LOCK TABLE chunks IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE posting_blocks ADD COLUMN first_chunk bigint;

-- The width of a column whose largest value is `largest`. None is negative (no chunk id
-- comes before the one before it; frequencies and lengths count terms); a negative one
-- would give no width, hence no column, which the table refuses (NOT NULL).
CREATE FUNCTION clearance_posting_width(smallest bigint, largest bigint) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN smallest < 0 THEN NULL WHEN largest < 256 THEN 1
        WHEN largest < 65536 THEN 2 WHEN largest < 4294967296 THEN 4 ELSE 8 END
$$;

-- Pack the postings of the given (term, class) pairs in one statement, so every block and
-- its version are read in one snapshot (migration 9 ran a statement a pair: at a million
-- chunks, this upgrade took half as long again that way). A pair with no postings
-- left loses its block. Returns the postings packed.
CREATE OR REPLACE FUNCTION clearance_pack_postings(pack_terms text[], pack_classes integer[])
RETURNS bigint LANGUAGE sql AS $$
    WITH pairs AS (
        SELECT DISTINCT term, class_id FROM unnest(pack_terms, pack_classes) AS x (term, class_id)),
    written AS (
        INSERT INTO posting_blocks AS b
            (term, class_id, version, postings, first_chunk, chunks, tfs, lengths)
        SELECT x.term, x.class_id,
            coalesce((SELECT t.changes FROM class_terms t
                      WHERE t.term = x.term AND t.class_id = x.class_id), 0)
            + coalesce((SELECT sum(d.changes) FROM class_term_deltas d
                        WHERE d.term = x.term AND d.class_id = x.class_id), 0),
            k.postings, k.first_chunk, k.chunks, k.tfs, k.lengths
        FROM pairs x CROSS JOIN LATERAL (
            SELECT count(*) AS postings, min(w.chunk) AS first_chunk,
                string_agg(substring(int8send(w.gap) FROM 9 - w.gap_width), ''::bytea
                           ORDER BY w.chunk) AS chunks,
                string_agg(substring(int8send(w.tf) FROM 9 - w.tf_width), ''::bytea
                           ORDER BY w.chunk) AS tfs,
                string_agg(substring(int8send(w.length) FROM 9 - w.length_width), ''::bytea
                           ORDER BY w.chunk) AS lengths
            FROM (SELECT g.chunk, g.gap, g.tf, g.length,
                    clearance_posting_width(min(g.gap) OVER (), max(g.gap) OVER ()) AS gap_width,
                    clearance_posting_width(min(g.tf) OVER (), max(g.tf) OVER ()) AS tf_width,
                    clearance_posting_width(min(g.length) OVER (), max(g.length) OVER ())
                        AS length_width
                  FROM (SELECT p.chunk, p.tf::bigint AS tf, p.length::bigint AS length,
                            p.chunk - lag(p.chunk, 1, p.chunk) OVER (ORDER BY p.chunk) AS gap
                        FROM postings p
                        WHERE p.term = x.term AND p.class_id = x.class_id) g) w
            HAVING count(*) > 0) k
        ORDER BY x.term, x.class_id
        ON CONFLICT (term, class_id) DO UPDATE SET version = excluded.version,
            postings = excluded.postings, first_chunk = excluded.first_chunk,
            chunks = excluded.chunks, tfs = excluded.tfs, lengths = excluded.lengths
        RETURNING b.postings),
    emptied AS (
        DELETE FROM posting_blocks b USING pairs x
        WHERE b.term = x.term AND b.class_id = x.class_id AND NOT EXISTS (
            SELECT FROM postings p WHERE p.term = x.term AND p.class_id = x.class_id))
    SELECT coalesce(sum(postings), 0)::bigint FROM written
$$;

-- Every pair that has a block is packed again into an empty table (a pair left without
-- postings loses it). Packed over the old rows instead, the upgrade took twice as long at
-- a million chunks and left the old rows' space behind.
DO $$
DECLARE
    terms text[];
    classes integer[];
BEGIN
    SELECT array_agg(term), array_agg(class_id) INTO terms, classes FROM posting_blocks;
    TRUNCATE posting_blocks;
    PERFORM clearance_pack_postings(terms, classes);
END
$$;
ALTER TABLE posting_blocks ALTER COLUMN first_chunk SET NOT NULL;
