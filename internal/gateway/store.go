package gateway

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/internal/store/postgres"
	"github.com/toolgate/toolgate/internal/store/sqlite"
)

// OpenStore opens gateway.store: a postgres:// or postgresql:// URL, or a
// file path, empty for the default file in the user data dir (OP-5).
func OpenStore(ctx context.Context, spec string) (core.Store, error) {
	if postgres.IsDSN(spec) {
		return postgres.Open(ctx, spec)
	}
	path := spec
	if path == "" {
		var err error
		if path, err = sqlite.DefaultPath(); err != nil {
			return nil, fmt.Errorf("gateway.store: %w", err)
		}
	}
	return sqlite.Open(ctx, path)
}

// newGate builds the confirm gate when a secret is configured; without one
// action tools are not served (config validation already requires the
// secret wherever action tools can be served). A store shared with other
// gateways must know them to use the same secret: one with another would
// issue tokens they refuse (CF-3), so it fails here, before serving.
func newGate(ctx context.Context, cfg *config.Config, ledger confirm.TokenLedger, approvals *confirm.ApprovalQueue, needsOperator func(core.Tool) bool) (*confirm.Gate, error) {
	secret := cfg.Gateway.Confirm.Secret.Reveal()
	if secret == "" {
		return nil, nil
	}
	gate, err := confirm.NewGate(confirm.GateOptions{
		Secret: []byte(secret), TTL: cfg.Gateway.Confirm.TTL, Ledger: ledger,
		Approvals: approvals, ApprovalWait: cfg.Gateway.Confirm.ApprovalWait,
		NeedsOperator: needsOperator, Messages: confirmMessages(cfg.Gateway.Confirm.Messages),
	})
	if err != nil {
		return nil, err
	}
	// After NewGate: a secret it refuses must not become the one recorded.
	if sc, ok := ledger.(core.SecretChecker); ok {
		id, err := ledger.StoreID(ctx)
		if err != nil {
			return nil, err
		}
		if err := sc.CheckConfirmSecret(ctx, confirm.SecretVerifier([]byte(secret), id)); err != nil {
			return nil, err
		}
	}
	return gate, nil
}

// confirmMessages are the gate's texts as m configures them (CF-7); an
// absent key is the gate's default.
func confirmMessages(m config.ConfirmMessages) confirm.ConfirmMessages {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return confirm.ConfirmMessages{
		Preview: s(m.Preview), Invalid: s(m.Invalid), Used: s(m.Used), Expired: s(m.Expired),
		Rejected: s(m.Rejected), TimedOut: s(m.TimedOut), Waiting: s(m.Waiting), ShuttingDown: s(m.ShuttingDown),
	}
}

// setOperators records which upstreams' actions wait for an operator
// (CF-5); a reload changes it live (OP-8).
func (g *Gateway) setOperators(cfg *config.Config) {
	operator := map[string]bool{}
	for _, name := range OperatorUpstreams(cfg) {
		operator[name] = true
	}
	g.operators.Store(&operator)
}

func (g *Gateway) needsOperator(t core.Tool) bool { return (*g.operators.Load())[t.Source] }

// OperatorUpstreams names the upstreams whose actions wait for an operator.
func OperatorUpstreams(cfg *config.Config) []string {
	var out []string
	for _, u := range cfg.Upstreams {
		if u.Approval == config.ApprovalOperator {
			out = append(out, u.Name)
		}
	}
	return out
}

// auditKey keys the audit log's argument hashes (OP-6) with a key derived
// from the confirm secret, so a guessable argument cannot be confirmed by
// hashing candidates; without a secret the hash is plain SHA-256.
func auditKey(cfg *config.Config) []byte {
	secret := cfg.Gateway.Confirm.Secret.Reveal()
	if secret == "" {
		return nil
	}
	sum := sha256.Sum256([]byte("toolgate audit key\x00" + secret))
	return sum[:]
}

// existingStore opens the configured store (PostgreSQL, or the default
// file) only when it exists, so check and tools see the review approvals
// without creating a store as a side effect; nil without one.
func existingStore(ctx context.Context, cfg *config.Config) (core.Store, error) {
	path := cfg.Gateway.Store
	if path == "" {
		var err error
		if path, err = sqlite.DefaultPath(); err != nil {
			return nil, nil
		}
	}
	if postgres.IsDSN(path) {
		// The replicas' decisions, read where they keep them (RV-3); a
		// database with no toolgate schema yet is left as it is.
		s, err := postgres.OpenExisting(ctx, path)
		if err != nil || s == nil {
			return nil, err
		}
		return s, nil
	}
	if strings.Contains(path, "://") {
		return nil, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	return sqlite.Open(ctx, path)
}
