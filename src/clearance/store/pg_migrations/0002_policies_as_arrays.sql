-- The row policies of chunks, per-document counts and facts, and the view they read,
-- written as arrays.
--
-- `doc_key IN (SELECT key FROM readable_documents)` became a hashed sub-plan evaluated as
-- a filter on every row of the table: every statement read all of `chunks`, however
-- little the caller may read. `doc_key = ANY (ARRAY(SELECT …))` admits exactly the same
-- rows; the sub-select is an InitPlan computed once per statement, and `= ANY (array)` is
-- an index condition on `chunks_doc`, `doc_levels`' key and `facts_doc`, so a statement
-- reaches the admitted rows through the index. The view itself read every row of
-- `documents` to semi-join it with the caller's ACL entries (20 ms at 100,000 documents
-- for a caller who may read 100 of them); driven from `doc_acl` as an array, it probes
-- `documents` by key (under 1 ms).

CREATE OR REPLACE VIEW readable_documents WITH (security_invoker = true) AS
    SELECT d.key FROM documents d
    WHERE d.key = ANY (ARRAY(SELECT a.doc_key FROM doc_acl a
                             WHERE a.principal = ANY (clearance_principals())))
      AND d.sensitivity BETWEEN 0 AND clearance_ceiling()
      AND d.corpus IN (SELECT clearance_fresh_corpora());

ALTER POLICY chunks_reader ON chunks USING (
    sensitivity BETWEEN 0 AND clearance_ceiling()
    AND doc_key = ANY (ARRAY(SELECT key FROM readable_documents)));

ALTER POLICY doc_levels_reader ON doc_levels USING (
    sensitivity BETWEEN 0 AND clearance_ceiling()
    AND doc_key = ANY (ARRAY(SELECT key FROM readable_documents)));

ALTER POLICY facts_reader ON facts USING (
    doc_key = ANY (ARRAY(SELECT key FROM readable_documents)));

-- A chunk's row in one piece. pgvector stores a vector EXTERNAL, and PostgreSQL moves
-- values out of a row past 2 kB, which a chunk's text and terms with a 384-dimensional
-- vector (1.5 kB) always pass: ranking then read every vector through the TOAST index,
-- eight pages a row (10,000 allowed chunks: 89,000 buffer reads, 170 ms), and with the
-- vector kept in, BM25 read every allowed chunk's terms the same way. Rows up to a page
-- now stay whole; past that, text and terms go out first, the vector (MAIN) only last.
-- Rows written before this migration keep their layout until rewritten (docs/postgres.md).
ALTER TABLE chunks SET (toast_tuple_target = 8160);
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN;
