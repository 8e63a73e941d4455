package gateway

import (
	"fmt"
	"os"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditchain"
)

// AuditKey is the key audit checkpoints are signed and verified with
// (OP-10): audit.checkpointKey, or else one derived from
// gateway.confirm.secret, which every gateway sharing a store shares; nil
// when the config has neither.
func AuditKey(cfg *config.Config) []byte {
	if k := cfg.Audit.CheckpointKey.Reveal(); k != "" {
		return []byte(k)
	}
	if s := cfg.Gateway.Confirm.Secret.Reveal(); s != "" {
		return auditchain.DeriveKey([]byte(s))
	}
	return nil
}

// startAudit gives the store's audit chain its key and, under
// audit.export, the exporter every committed batch goes to (OP-10).
func (g *Gateway) startAudit() error {
	cs, ok := g.store.(auditchain.Store)
	if !ok {
		if g.cfg.Audit.Export.Path != "" {
			g.log.Warn("audit.export: this store keeps no audit chain; nothing is exported", "store", fmt.Sprintf("%T", g.store))
		}
		return nil
	}
	w := cs.AuditChain()
	key := AuditKey(g.cfg)
	w.SetKey(key)
	if key == nil {
		g.log.Warn("audit checkpoints are not signed: set audit.checkpointKey or gateway.confirm.secret, or a cut tail of the audit goes unnoticed (see docs/operations.md#the-audit-log)")
	}
	path := g.cfg.Audit.Export.Path
	if path == "" {
		return nil
	}
	exp, err := auditchain.OpenExporter(path, os.Stdout)
	if err != nil {
		return err
	}
	g.export = exp
	failing := false // touched by the store's flusher only
	w.SetSink(func(recs []core.AuditRecord, links []auditchain.Link) {
		exp.Write(recs, links)
		switch err := exp.Err(); {
		case err != nil && !failing:
			failing = true
			g.log.Error("audit export failing; records stay in the store", "path", path, "err", err)
		case err == nil && failing:
			failing = false
			g.log.Info("audit export writing again", "path", path)
		}
	})
	return nil
}

// ReopenAuditExport reopens the audit.export file at its path, so records
// go to a new file once logrotate has moved the old one (SIGHUP).
func (g *Gateway) ReopenAuditExport() {
	if g.export == nil {
		return
	}
	if err := g.export.Reopen(); err != nil {
		g.log.Error("audit export: reopening the file", "path", g.export.Path(), "err", err)
		return
	}
	g.log.Info("audit export reopened", "path", g.export.Path())
}

// closeAudit closes the exporter once the store has committed its last
// records, and detaches it from a store the gateway does not own.
func (g *Gateway) closeAudit() {
	if g.export == nil {
		return
	}
	if cs, ok := g.store.(auditchain.Store); ok && !g.ownStore {
		cs.AuditChain().SetSink(nil)
	}
	if err := g.export.Close(); err != nil {
		g.log.Error("audit export: closing the file", "path", g.export.Path(), "err", err)
	}
}
