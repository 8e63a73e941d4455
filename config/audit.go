package config

import (
	"os"
	"path/filepath"
)

// MinCheckpointKeyBytes is the shortest audit.checkpointKey accepted, as for
// gateway.confirm.secret: an HMAC-SHA256 key.
const MinCheckpointKeyBytes = 32

// Audit is the tamper-evident audit's settings (OP-10).
type Audit struct {
	// CheckpointKey signs the audit chains' checkpoints (HMAC-SHA256). Every
	// gateway sharing a store, and `toolgate audit verify`, must use the
	// same. Empty: a key derived from gateway.confirm.secret; with neither,
	// no checkpoints are signed and a cut tail goes unnoticed.
	CheckpointKey Secret `koanf:"checkpointKey" json:"checkpointKey,omitempty" yaml:"checkpointKey,omitempty"`
	// Export writes each committed audit record as a JSON line.
	Export AuditExport `koanf:"export" json:"export,omitzero" yaml:"export,omitempty"`
}

// AuditExport is audit.export: a file that log shippers tail.
type AuditExport struct {
	// Path is the file records are appended to (relative to the config
	// file), reopened on SIGHUP so logrotate can move it; "-" is stdout.
	// Empty: no export.
	Path string `koanf:"path" json:"path,omitempty" yaml:"path,omitempty"`
}

// audit validates the audit section.
func (v *validator) audit() {
	a := v.c.Audit
	if k := a.CheckpointKey.Reveal(); k != "" && len(k) < MinCheckpointKeyBytes {
		v.fail("audit.checkpointKey", "must be at least %d bytes long: use a long random key, e.g. in the environment as %s", MinCheckpointKeyBytes, envOf("audit.checkpointKey"))
	}
	if p := a.Export.Path; p != "" && p != "-" {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			v.fail("audit.export.path", "is a directory; name a file in it, such as %s", filepath.Join(p, "audit.jsonl"))
		}
	}
}
