-- Mailgun's signature covers only `timestamp` + `token`, not the body (issue 40 item 4): a
-- captured signature could carry any other event. The provider routes remember each signature
-- token they accepted with the SHA-256 of the body it came with: the same token with the same body
-- is the provider's own retry (applied again, a duplicate event), with another body a replay (401).
-- Rows older than the signature age limit are useless (such a signature is refused for its age)
-- and are deleted by the routes as they insert. Owner: services/api src/providers/used-tokens.ts.
-- Never edit an applied file: add a new one instead.

CREATE TABLE provider_tokens (
  provider    text NOT NULL,        -- `mailgun` (the one provider whose signature leaves the body out)
  token_hash  bytea NOT NULL,       -- SHA-256 of the provider's signature token
  body_hash   bytea NOT NULL,       -- SHA-256 of the request body the token was first accepted with
  received_at timestamptz NOT NULL, -- when it was first accepted: rows past the age limit are pruned
  PRIMARY KEY (provider, token_hash)
);

CREATE INDEX provider_tokens_age ON provider_tokens (received_at);
