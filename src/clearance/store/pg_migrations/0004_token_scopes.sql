-- API token scopes (api/tokens.py): what a token may be used for, comma-separated
-- (search, ask, admin, scim). NULL is a token made before scopes: it keeps what it could
-- do (reading, and the administrator routes when admin).
ALTER TABLE api_tokens ADD COLUMN scopes text;
