package postgres

// migrations are applied in order, all in one transaction at Open under an
// advisory lock; {s}.schema_version holds the number applied so far. Append
// only: a released migration is never edited, since databases in the field
// already ran it. {s} is the quoted schema.
//
// Times are Unix nanoseconds (bigint) where they are compared or indexed,
// RFC 3339 text (UTC) where they are only shown, as in the embedded store,
// so both keep the nanoseconds a time.Time has.
var migrations = []string{
	// 1: approvals (RV-1, RV-4), the confirm ledger (CF-4), the audit log
	// (OP-6), the store's identity (CF-3) and the confirm secret's verifier
	// (core.SecretChecker).
	`
CREATE TABLE {s}.approvals (
	source      text NOT NULL,
	remote_name text NOT NULL,
	fingerprint text NOT NULL,
	decision    text NOT NULL CHECK (decision IN ('approved', 'rejected')),
	decided_by  text NOT NULL,
	decided_at  text NOT NULL,
	PRIMARY KEY (source, remote_name)
);

-- The primary key is the single-use rule: of two replicas inserting one id,
-- exactly one inserts a row (CF-4).
CREATE TABLE {s}.spent_tokens (
	id      text PRIMARY KEY,
	expires bigint NOT NULL
);
CREATE INDEX spent_tokens_expires ON {s}.spent_tokens (expires);

-- No column for argument values: they may hold secrets (OP-6).
CREATE TABLE {s}.audit (
	seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- append order, breaks ties in time
	time             bigint NOT NULL,
	endpoint         text NOT NULL,
	actor_id         text NOT NULL,
	tenant           text NOT NULL,
	session          text NOT NULL,
	tool             text NOT NULL,
	source           text NOT NULL,
	remote_name      text NOT NULL,
	args_hash        text NOT NULL,
	outcome          text NOT NULL,
	latency          bigint NOT NULL, -- nanoseconds
	confirm_token_id text NOT NULL,
	call_id          text NOT NULL
);
CREATE INDEX audit_time ON {s}.audit (time, seq);

-- One row, made once with the store: confirm tokens are bound to it.
CREATE TABLE {s}.store_identity (
	one        int PRIMARY KEY CHECK (one = 1),
	id         text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO {s}.store_identity (one, id) VALUES (1, replace(gen_random_uuid()::text, '-', ''));

-- One row, written by the first gateway that starts with a confirm secret:
-- an HMAC under the secret (confirm.SecretVerifier), never the secret.
CREATE TABLE {s}.confirm_secret (
	one         int PRIMARY KEY CHECK (one = 1),
	verifier    text NOT NULL,
	recorded_at timestamptz NOT NULL DEFAULT now(),
	recorded_by text NOT NULL
);
`,
	// 2: the confirmations waiting for an operator, shared by the replicas
	// (CF-5, CO-9). A row is settled once: the UPDATE that finds decision
	// NULL wins. info (arguments and preview) is cleared when it is.
	`
CREATE TABLE {s}.pending_confirmations (
	id         text PRIMARY KEY,
	info       text,            -- core.PendingConfirmation as JSON, while waiting
	created    bigint NOT NULL,
	deadline   bigint NOT NULL,
	decision   text CHECK (decision IN ('approved', 'rejected', 'timed-out', 'abandoned')),
	decided_by text NOT NULL DEFAULT '',
	reason     text NOT NULL DEFAULT '',
	decided_at bigint
);
CREATE INDEX pending_confirmations_open ON {s}.pending_confirmations (created, id) WHERE decision IS NULL;
CREATE INDEX pending_confirmations_deadline ON {s}.pending_confirmations (deadline);
`,
	// 3: every replica's live client sessions, for the Sessions pane of
	// any (CO-5, OP-5). A replica rewrites its rows and its beat on every
	// change and at least every core beat; rows of a replica whose beat
	// is old are not listed. key is core.SessionKey, a digest: never the
	// session id, which with the actor's credentials continues it.
	`
CREATE TABLE {s}.replicas (
	replica text PRIMARY KEY,
	beat    bigint NOT NULL
);
CREATE TABLE {s}.sessions (
	replica        text NOT NULL REFERENCES {s}.replicas (replica) ON DELETE CASCADE,
	key            text NOT NULL,
	endpoint       text NOT NULL,
	actor_id       text NOT NULL,
	tenant         text NOT NULL,
	client_name    text NOT NULL,
	client_version text NOT NULL,
	protocol       text NOT NULL,
	started        bigint NOT NULL,
	last_activity  bigint NOT NULL,
	calls          bigint NOT NULL,
	PRIMARY KEY (replica, key)
);
`,
	// 4: the policy rule or limit that decided each call (PO-4); '' for
	// records written before.
	`
ALTER TABLE {s}.audit ADD COLUMN rule text NOT NULL DEFAULT '';
`,
	// 5: calls counted per quota and window (PO-3); start is the
	// window's start in Unix nanoseconds.
	`
CREATE TABLE {s}.quota_counts (
	key    text NOT NULL,
	start  bigint NOT NULL,
	count  bigint NOT NULL,
	PRIMARY KEY (key, start)
);
CREATE INDEX quota_counts_window ON {s}.quota_counts (start);
`,
	// 6: the audit chains (OP-10): each record's place in its writer's
	// chain, and the writers' signed checkpoints. Records written before
	// keep an empty chain_id: they read as unchained, not as altered.
	`
ALTER TABLE {s}.audit
	ADD COLUMN chain_id text NOT NULL DEFAULT '',
	ADD COLUMN chain_seq bigint NOT NULL DEFAULT 0,
	ADD COLUMN chain_hash text NOT NULL DEFAULT '';
CREATE TABLE {s}.audit_checkpoints (
	chain_id text NOT NULL,
	seq      bigint NOT NULL,
	hash     text NOT NULL,
	time     bigint NOT NULL,
	writer   text NOT NULL,
	mac      text NOT NULL,
	PRIMARY KEY (chain_id, seq)
);
`,
	// 7: upstream OAuth connections (UI-2, UI-3): one per upstream and
	// actor, the tokens sealed with the credentials key (never in clear);
	// version guards a refresh against a concurrent one on another replica.
	`
CREATE TABLE {s}.upstream_connections (
	id         text PRIMARY KEY,
	upstream   text NOT NULL,
	actor_id   text NOT NULL,
	scopes     text NOT NULL,
	expiry     bigint NOT NULL,
	broken     text NOT NULL,
	created_at bigint NOT NULL,
	last_used  bigint NOT NULL,
	sealed     bytea NOT NULL,
	key_id     text NOT NULL,
	version    bigint NOT NULL,
	UNIQUE (upstream, actor_id)
);
`,
	// 8: the upstream OAuth connection each call went upstream with
	// (UI-3); '' for records written before and for other upstreams.
	`
ALTER TABLE {s}.audit ADD COLUMN connection text NOT NULL DEFAULT '';
`,
	// 9: a call's records found without reading the log (OP-6, OP-10):
	// by call id, and a record's neighbours in its chain in append order.
	`
CREATE INDEX audit_call ON {s}.audit (call_id);
CREATE INDEX audit_chain ON {s}.audit (chain_id, seq);
`,
	// 10: the meta-tool a call came through (DS-2); '' for a direct call
	// and for records written before.
	`
ALTER TABLE {s}.audit ADD COLUMN via text NOT NULL DEFAULT '';
`,
	// 11: where each replica can be reached by the others, for a request
	// that belongs to a call or session living there (OP-11); '' for a
	// replica that advertises nothing.
	`
ALTER TABLE {s}.replicas ADD COLUMN addr text NOT NULL DEFAULT '';
`,
	// 12: what inspection found in a call and did (IN-2): kinds, detectors,
	// places and actions as JSON, never values; '' for none and for
	// records written before.
	`
ALTER TABLE {s}.audit ADD COLUMN findings text NOT NULL DEFAULT '';
`,
	// 13: what the last lease of a quota count took (PO-3): the update's
	// SET reads the count before it, so the lease learns how many units
	// it got in the one statement that takes them.
	`
ALTER TABLE {s}.quota_counts ADD COLUMN granted bigint NOT NULL DEFAULT 0;
`,
	// 14: the flow labels sessions and sessionless clients gathered
	// (IN-3), so a session continued on another replica keeps them: one
	// row a flow, keyed by a digest (never a session id), until in Unix
	// nanoseconds.
	`
CREATE TABLE {s}.flow_labels (
	key    text PRIMARY KEY,
	labels text[] NOT NULL,
	until  bigint NOT NULL
);
CREATE INDEX flow_labels_until ON {s}.flow_labels (until);
`,
}
