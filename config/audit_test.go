package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const auditKeyValue = "audit-key-" + leakMarker + "-0123456789abcdef0123"

// OP-10: audit.checkpointKey and audit.export.path load, the path relative
// to the config file, "-" kept as stdout; the key is never printed.
func TestAuditConfigLoads(t *testing.T) {
	path := writeConfig(t, "audit:\n  checkpointKey: ${AUDIT_KEY}\n  export: {path: log/audit.jsonl}\n")
	cfg, _ := mustLoad(t, path, withEnv(map[string]string{"AUDIT_KEY": auditKeyValue}))
	if want := filepath.Join(filepath.Dir(path), "log", "audit.jsonl"); cfg.Audit.Export.Path != want {
		t.Errorf("audit.export.path = %q, want %q", cfg.Audit.Export.Path, want)
	}
	if cfg.Audit.CheckpointKey.Reveal() != auditKeyValue {
		t.Errorf("audit.checkpointKey not loaded")
	}
	dump, err := Dump(cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertNoLeak(t, "the dump", string(dump))

	cfg, _ = mustLoad(t, writeConfig(t, "audit:\n  export: {path: \"-\"}\n"), withEnv(nil))
	if cfg.Audit.Export.Path != "-" {
		t.Errorf("audit.export.path = %q, want - (stdout)", cfg.Audit.Export.Path)
	}
}

// OP-10: bad audit values are errors naming the key path, without the key.
func TestAuditConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, yaml, path, msg string }{
		{"short key", "audit:\n  checkpointKey: " + leakMarker + "-short\n", "audit.checkpointKey", "at least 32 bytes"},
		{"directory", "audit:\n  export: {path: " + dir + "}\n", "audit.export.path", "is a directory"},
		{"unknown key", "audit:\n  export: {file: x}\n", "", `audit.export: unknown key "file"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Load(writeConfig(t, tc.yaml), optionsFor(withEnv(nil)))
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			assertNoLeak(t, "the error", err.Error())
			var ve *ValidationErrors
			if tc.path == "" {
				if !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("error %q does not name %s", err, tc.msg)
				}
				return
			}
			if !errors.As(err, &ve) {
				t.Fatalf("error %T %v, want *ValidationErrors", err, err)
			}
			for _, fe := range ve.Errors {
				if fe.Path == tc.path && strings.Contains(fe.Message, tc.msg) {
					return
				}
			}
			t.Fatalf("errors %v lack %s: …%s…", err, tc.path, tc.msg)
		})
	}
}
