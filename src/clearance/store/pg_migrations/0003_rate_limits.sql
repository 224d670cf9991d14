-- The request allowances of api/limits.py (SharedRateLimiter): one row per user or client
-- address, holding the bucket's theoretical arrival time (epoch seconds), as in the
-- embedded store. Every server process on the database shares them.
--
-- UNLOGGED: an allowance is worth a minute at most, so it is not written to the WAL (each
-- request's upsert stays one small, unflushed write); a crash empties the table, which
-- gives every caller a full allowance once, and a standby has no rows to take over.
-- Written by the writing role only, like api_tokens: the reading role gets no grant.
CREATE UNLOGGED TABLE rate_limits (
    key text PRIMARY KEY,
    tat double precision NOT NULL
);
