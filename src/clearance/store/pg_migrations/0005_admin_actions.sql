-- The log of administrator actions (trace/actions.py): directory and ACL syncs, ingestion,
-- token changes and SCIM writes, with who, what, on what and the outcome. No secrets, no
-- document text. Written by the writing role only, like api_tokens: the reading role gets
-- no grant.
CREATE TABLE admin_actions (
    id text PRIMARY KEY,
    at text NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    target text NOT NULL,
    outcome text NOT NULL,
    detail text NOT NULL
);
CREATE INDEX admin_actions_actor_at ON admin_actions (actor, at);
