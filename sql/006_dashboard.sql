-- Dashboard sessions: the opaque value of the `pushtrack_session` cookie, stored as its SHA-256,
-- tied to the API token that signed in. Revoking the token ends its sessions (the lookup joins
-- api_tokens); deleting the token deletes them.
CREATE TABLE dashboard_sessions (
    session_hash bytea PRIMARY KEY CHECK (length(session_hash) = 32),
    token_hash   bytea NOT NULL REFERENCES api_tokens ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);

CREATE INDEX dashboard_sessions_expires_at ON dashboard_sessions (expires_at);
CREATE INDEX dashboard_sessions_token_hash ON dashboard_sessions (token_hash);
