package sqlite

// migrations are applied in order, each in its own transaction; the file's
// PRAGMA user_version is the number applied so far. Append only: a released
// migration is never edited, since files in the field already ran it.
//
// Times are Unix nanoseconds (INTEGER) where they are compared or indexed,
// RFC 3339 text (UTC) where they are only shown.
var migrations = []string{
	// 1: approvals (RV-1, RV-4), the confirm ledger (CF-4), the audit log (OP-6).
	`
CREATE TABLE approvals (
	source      TEXT NOT NULL,
	remote_name TEXT NOT NULL,
	fingerprint TEXT NOT NULL,
	decision    TEXT NOT NULL CHECK (decision IN ('approved', 'rejected')),
	decided_by  TEXT NOT NULL,
	decided_at  TEXT NOT NULL,
	PRIMARY KEY (source, remote_name)
) WITHOUT ROWID;

CREATE TABLE spent_tokens (
	id      TEXT PRIMARY KEY,
	expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX spent_tokens_expires ON spent_tokens (expires);

-- No column for argument values: they may hold secrets (OP-6).
CREATE TABLE audit (
	seq              INTEGER PRIMARY KEY, -- append order, breaks ties in time
	time             INTEGER NOT NULL,
	endpoint         TEXT NOT NULL,
	actor_id         TEXT NOT NULL,
	tenant           TEXT NOT NULL,
	session          TEXT NOT NULL,
	tool             TEXT NOT NULL,
	source           TEXT NOT NULL,
	remote_name      TEXT NOT NULL,
	args_hash        TEXT NOT NULL,
	outcome          TEXT NOT NULL,
	latency          INTEGER NOT NULL, -- nanoseconds
	confirm_token_id TEXT NOT NULL,
	call_id          TEXT NOT NULL
);
CREATE INDEX audit_time ON audit (time, seq);
`,
	// 2: the store's identity (CF-3): confirm tokens are bound to it, so a
	// token issued against this store is refused by any other. One row,
	// made once with the file; copies of the file share it.
	`
CREATE TABLE store_identity (
	one        INTEGER PRIMARY KEY CHECK (one = 1),
	id         TEXT NOT NULL,
	created_at TEXT NOT NULL
);
INSERT INTO store_identity (one, id, created_at)
	VALUES (1, lower(hex(randomblob(16))), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
`,
	// 3: the confirm secret's verifier (core.SecretChecker), written by the
	// first gateway that starts with a secret: an HMAC under the secret
	// (confirm.SecretVerifier), never the secret.
	`
CREATE TABLE confirm_secret (
	one         INTEGER PRIMARY KEY CHECK (one = 1),
	verifier    TEXT NOT NULL,
	recorded_at TEXT NOT NULL,
	recorded_by TEXT NOT NULL
);
`,
	// 4: the policy rule or limit that decided each call (PO-4); "" for
	// records written before.
	`
ALTER TABLE audit ADD COLUMN rule TEXT NOT NULL DEFAULT '';
`,
	// 5: calls counted per quota and window (PO-3); start is the
	// window's start in Unix nanoseconds.
	`
CREATE TABLE quota_counts (
	key    TEXT NOT NULL,
	start  INTEGER NOT NULL,
	count  INTEGER NOT NULL,
	PRIMARY KEY (key, start)
) WITHOUT ROWID;
CREATE INDEX quota_counts_window ON quota_counts (start);
`,
	// 6: the audit chains (OP-10): each record's place in its writer's
	// chain, and the writers' signed checkpoints. Records written before
	// keep an empty chain_id: they read as unchained, not as altered.
	`
ALTER TABLE audit ADD COLUMN chain_id TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN chain_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit ADD COLUMN chain_hash TEXT NOT NULL DEFAULT '';
CREATE TABLE audit_checkpoints (
	chain_id TEXT NOT NULL,
	seq      INTEGER NOT NULL,
	hash     TEXT NOT NULL,
	time     INTEGER NOT NULL,
	writer   TEXT NOT NULL,
	mac      TEXT NOT NULL,
	PRIMARY KEY (chain_id, seq)
) WITHOUT ROWID;
`,
	// 7: upstream OAuth connections (UI-2, UI-3): one per upstream and
	// actor, the tokens sealed with the credentials key (never in clear);
	// version guards a refresh against a concurrent one.
	`
CREATE TABLE upstream_connections (
	id         TEXT PRIMARY KEY,
	upstream   TEXT NOT NULL,
	actor_id   TEXT NOT NULL,
	scopes     TEXT NOT NULL, -- space-separated
	expiry     INTEGER NOT NULL, -- Unix nanoseconds; 0: none
	broken     TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	last_used  INTEGER NOT NULL,
	sealed     BLOB NOT NULL,
	key_id     TEXT NOT NULL,
	version    INTEGER NOT NULL,
	UNIQUE (upstream, actor_id)
) WITHOUT ROWID;
`,
	// 8: the upstream OAuth connection each call went upstream with
	// (UI-3); "" for records written before and for other upstreams.
	`
ALTER TABLE audit ADD COLUMN connection TEXT NOT NULL DEFAULT '';
`,
	// 9: a call's records found without reading the log (OP-6, OP-10):
	// by call id, and a record's neighbours in its chain in append order.
	`
CREATE INDEX audit_call ON audit (call_id);
CREATE INDEX audit_chain ON audit (chain_id, seq);
`,
	// 10: the meta-tool a call came through (DS-2); "" for a direct call
	// and for records written before.
	`
ALTER TABLE audit ADD COLUMN via TEXT NOT NULL DEFAULT '';
`,
	// 11: what inspection found in a call and did (IN-2): kinds, detectors,
	// places and actions as JSON, never values; "" for none and for
	// records written before.
	`
ALTER TABLE audit ADD COLUMN findings TEXT NOT NULL DEFAULT '';
`,
	// 12: what the last lease of a quota count took (PO-3): the update's
	// SET reads the count before it, so the lease learns how many units
	// it got in the one statement that takes them.
	`
ALTER TABLE quota_counts ADD COLUMN granted INTEGER NOT NULL DEFAULT 0;
`,
	// 13: the flow labels sessions and sessionless clients gathered
	// (IN-3), so a session continued after a restart keeps them: one row a
	// flow, keyed by a digest (never a session id), its labels a JSON array
	// of strings, until in Unix nanoseconds.
	`
CREATE TABLE flow_labels (
	key    TEXT PRIMARY KEY,
	labels TEXT NOT NULL,
	until  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX flow_labels_until ON flow_labels (until);
`,
}
