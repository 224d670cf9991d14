-- The index: documents, their ACLs, chunks with their analysed terms and vectors, facts,
-- metadata and ACL sync times; the tables other modules keep beside it; and row-level
-- security on everything that carries document content.
CREATE EXTENSION IF NOT EXISTS vector;

-- Small values (JSON text). `generation` is new on every insert or update of a row, so a
-- reader can tell that a large value (the synced directory) changed from one number.
CREATE SEQUENCE meta_generation;
CREATE TABLE meta (
    key text PRIMARY KEY,
    value text NOT NULL,
    generation bigint NOT NULL DEFAULT 0
);
CREATE FUNCTION meta_bump_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.generation := nextval('meta_generation');
    RETURN NEW;
END
$$;
CREATE TRIGGER meta_bumps_generation BEFORE INSERT OR UPDATE ON meta
    FOR EACH ROW EXECUTE FUNCTION meta_bump_generation();

-- Times are epoch seconds (double precision), as the embedded store keeps them, so a
-- document reads back exactly as it was written whichever backend holds it.
CREATE TABLE documents (
    key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    doc_id text NOT NULL UNIQUE,
    source_system text NOT NULL,
    corpus text NOT NULL,
    title text NOT NULL,
    uri text NOT NULL,
    owner text,
    sensitivity smallint NOT NULL,
    created_at double precision,
    updated_at double precision,
    review_at double precision,
    expires_at double precision,
    ai_allowed boolean NOT NULL,
    personal_data boolean NOT NULL,
    origin text NOT NULL,
    origin_chain text NOT NULL,
    content_hash text NOT NULL,
    version integer NOT NULL,
    path text,
    format text NOT NULL,
    extra text NOT NULL,
    ingested_at double precision NOT NULL
);
CREATE INDEX documents_corpus ON documents (corpus);

CREATE TABLE doc_acl (
    doc_key bigint NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    principal text NOT NULL,
    PRIMARY KEY (doc_key, principal)
);
CREATE INDEX doc_acl_principal ON doc_acl (principal, doc_key);

-- A chunk keeps its index terms as the project's own analyser made them (distinct terms,
-- sorted, with their frequencies and the chunk's length in terms), so ranking here is
-- the embedded store's BM25 exactly. `embedding` has no fixed width in the table: the
-- first vector written fixes it, and the HNSW index is built over that width
-- (chunks_embedding_<dim>), created by the writer that stores the first vector.
CREATE TABLE chunks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chunk_id text NOT NULL UNIQUE,
    doc_key bigint NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    ordinal integer NOT NULL,
    text text NOT NULL,
    locator text NOT NULL,
    sensitivity smallint NOT NULL,
    origin text NOT NULL,
    length integer NOT NULL,
    terms text[] NOT NULL,
    tfs integer[] NOT NULL,
    embedding vector
);
CREATE INDEX chunks_doc ON chunks (doc_key, sensitivity);
CREATE INDEX chunks_terms ON chunks USING gin (terms);

-- Per document and chunk sensitivity: how many chunks and how many terms in them. BM25's
-- N and average length over the allowed chunks come from here, one row per document
-- instead of one per chunk.
CREATE TABLE doc_levels (
    doc_key bigint NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    sensitivity smallint NOT NULL,
    chunks integer NOT NULL,
    length bigint NOT NULL,
    PRIMARY KEY (doc_key, sensitivity)
);

CREATE TABLE corpus_sync (
    corpus text PRIMARY KEY,
    last_acl_sync double precision NOT NULL
);
-- Each corpus's revocation SLA as configured, written by the application when it opens;
-- a corpus without a row has the default SLA (24 hours).
CREATE TABLE corpus_sla (
    corpus text PRIMARY KEY,
    sla_seconds double precision NOT NULL
);

CREATE TABLE facts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    doc_key bigint NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    entity text NOT NULL,
    period text NOT NULL,
    metric text NOT NULL,
    channel text NOT NULL,
    value double precision NOT NULL,
    unit text NOT NULL,
    raw text NOT NULL,
    locator text NOT NULL
);
CREATE INDEX facts_lookup ON facts (metric, entity, period);
CREATE INDEX facts_doc ON facts (doc_key);

-- Tables of other modules (answer/faq.py, api/tokens.py, api/sessions.py,
-- sources/state.py, trace/record.py), with the same columns as in the embedded store.
CREATE TABLE faq_entries (
    id text PRIMARY KEY,
    question text NOT NULL,
    aliases text NOT NULL,
    answer text NOT NULL,
    citations text NOT NULL,
    acl text NOT NULL,
    sensitivity integer NOT NULL,
    valid_from text,
    valid_until text
);
CREATE TABLE faq_state (
    key text PRIMARY KEY,
    value bigint NOT NULL
);
CREATE TABLE api_tokens (
    id text PRIMARY KEY,
    user_id text NOT NULL,
    admin integer NOT NULL,
    secret_sha256 text NOT NULL,
    created_at text NOT NULL,
    expires_at text,
    revoked_at text
);
CREATE TABLE ui_sessions (
    id_sha256 text PRIMARY KEY,
    user_id text NOT NULL,
    method text NOT NULL,
    token_id text,
    csrf text NOT NULL,
    created_at text NOT NULL,
    expires_at text NOT NULL
);
CREATE TABLE source_state (
    name text PRIMARY KEY,
    content_cursor text,
    permission_cursor text,
    content_synced_at double precision,
    permission_synced_at double precision,
    content_attempted_at double precision,
    permission_attempted_at double precision,
    last_error text,
    failing_since double precision,
    groups text NOT NULL DEFAULT '[]',
    stats text NOT NULL DEFAULT '{}'
);
-- `seq` orders records written in the same microsecond, as SQLite's rowid does.
CREATE TABLE traces (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    trace_id text PRIMARY KEY,
    created_at text NOT NULL,
    record text NOT NULL
);
CREATE INDEX traces_created ON traces (created_at);

-- ------------------------------------------------------------------ row-level security
--
-- The application's read path runs each request in a transaction that sets, with
-- set_config(..., true), the caller's principal set (`clearance.principals`, a JSON array
-- of strings) and sensitivity ceiling (`clearance.ceiling`, 0 PUBLIC … 3 RESTRICTED). The
-- policies below admit a row only if its document's ACL names one of those principals,
-- its sensitivity (and its document's) is within the ceiling, and its corpus's last ACL
-- sync is within the corpus's SLA by this server's clock. No setting: no row.

CREATE FUNCTION clearance_principals() RETURNS text[] LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        ARRAY(SELECT jsonb_array_elements_text(
            nullif(current_setting('clearance.principals', true), '')::jsonb)),
        '{}')
$$;

CREATE FUNCTION clearance_ceiling() RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT coalesce(nullif(current_setting('clearance.ceiling', true), '')::integer, -1)
$$;

-- Fresh as the application judges it (access/policy.py, CorpusFreshness): synced no more
-- than the SLA ago, and no more than a minute in the future.
CREATE FUNCTION clearance_fresh_corpora() RETURNS SETOF text LANGUAGE sql STABLE AS $$
    SELECT s.corpus FROM corpus_sync s LEFT JOIN corpus_sla p ON p.corpus = s.corpus
    WHERE extract(epoch FROM now())::double precision - s.last_acl_sync
          BETWEEN -60 AND coalesce(p.sla_seconds, 86400)
$$;

-- The documents the settings admit (a security-invoker view: it reads as the caller).
CREATE VIEW readable_documents WITH (security_invoker = true) AS
    SELECT d.key FROM documents d
    WHERE d.key IN (SELECT a.doc_key FROM doc_acl a
                    WHERE a.principal = ANY (clearance_principals()))
      AND d.sensitivity BETWEEN 0 AND clearance_ceiling()
      AND d.corpus IN (SELECT clearance_fresh_corpora());

ALTER TABLE chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE chunks FORCE ROW LEVEL SECURITY;
CREATE POLICY chunks_owner ON chunks TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY chunks_reader ON chunks FOR SELECT USING (
    sensitivity BETWEEN 0 AND clearance_ceiling()
    AND doc_key IN (SELECT key FROM readable_documents));

ALTER TABLE doc_levels ENABLE ROW LEVEL SECURITY;
ALTER TABLE doc_levels FORCE ROW LEVEL SECURITY;
CREATE POLICY doc_levels_owner ON doc_levels TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY doc_levels_reader ON doc_levels FOR SELECT USING (
    sensitivity BETWEEN 0 AND clearance_ceiling()
    AND doc_key IN (SELECT key FROM readable_documents));

ALTER TABLE facts ENABLE ROW LEVEL SECURITY;
ALTER TABLE facts FORCE ROW LEVEL SECURITY;
CREATE POLICY facts_owner ON facts TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY facts_reader ON facts FOR SELECT USING (
    doc_key IN (SELECT key FROM readable_documents));

-- A FAQ entry carries its own ACL (a JSON array) and sensitivity, and no corpus.
ALTER TABLE faq_entries ENABLE ROW LEVEL SECURITY;
ALTER TABLE faq_entries FORCE ROW LEVEL SECURITY;
CREATE POLICY faq_entries_owner ON faq_entries TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY faq_entries_reader ON faq_entries FOR SELECT USING (
    sensitivity BETWEEN 0 AND clearance_ceiling()
    AND acl::jsonb ?| clearance_principals());
