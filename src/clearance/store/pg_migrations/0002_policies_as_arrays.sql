-- The row policies of chunks, per-document counts and facts, written as an array.
--
-- `doc_key IN (SELECT key FROM readable_documents)` became a hashed sub-plan evaluated as
-- a filter on every row of the table: every statement read all of `chunks`, however
-- little the caller may read. `doc_key = ANY (ARRAY(SELECT …))` admits exactly the same
-- rows; the sub-select is an InitPlan computed once per statement, and `= ANY (array)` is
-- an index condition on `chunks_doc`, `doc_levels`' key and `facts_doc`, so a statement
-- reaches the admitted rows through the index.

ALTER POLICY chunks_reader ON chunks USING (
    sensitivity BETWEEN 0 AND clearance_ceiling()
    AND doc_key = ANY (ARRAY(SELECT key FROM readable_documents)));

ALTER POLICY doc_levels_reader ON doc_levels USING (
    sensitivity BETWEEN 0 AND clearance_ceiling()
    AND doc_key = ANY (ARRAY(SELECT key FROM readable_documents)));

ALTER POLICY facts_reader ON facts USING (
    doc_key = ANY (ARRAY(SELECT key FROM readable_documents)));
