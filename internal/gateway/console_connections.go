package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
)

// ConnectionDesk is what a console reads and does of the gateway's upstream
// connections (UI-3); the upstream OAuth manager is one.
type ConnectionDesk interface {
	Connections(ctx context.Context) ([]core.Connection, error)
	// Revoke forgets a connection and publishes it as change.
	Revoke(ctx context.Context, id, change string) (core.Connection, error)
}

// Connections lists every connection without its sealed tokens; a gateway
// with no OAuth upstream has none.
func (c *LocalConsole) Connections(ctx context.Context) ([]core.Connection, error) {
	if c.OAuth == nil {
		return []core.Connection{}, nil
	}
	list, err := c.OAuth.Connections(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]core.Connection, len(list))
	for i, cn := range list {
		cn.Sealed, cn.KeyID = nil, ""
		out[i] = cn
	}
	return out, nil
}

// RevokeConnection forgets a connection; its actor's next call asks to
// connect again.
func (c *LocalConsole) RevokeConnection(ctx context.Context, id, _ string) (core.Connection, error) {
	if c.OAuth == nil {
		return core.Connection{}, fmt.Errorf("%q: %w (this gateway has no oauth upstream)", id, core.ErrNoConnection)
	}
	cn, err := c.OAuth.Revoke(ctx, id, "revoked")
	cn.Sealed, cn.KeyID = nil, ""
	return cn, err
}

func (c *accountedConsole) Connections(ctx context.Context) ([]core.Connection, error) {
	return c.local.Connections(ctx)
}

// RevokeConnection is recorded as the operator's action (UI-3); the admin
// API's revoke goes through here too.
func (c *accountedConsole) RevokeConnection(ctx context.Context, id, by string) (core.Connection, error) {
	start := time.Now()
	cn, err := c.local.RevokeConnection(ctx, id, by)
	detail := ""
	if err == nil {
		detail = fmt.Sprintf("%s on %s", core.ActorLabel(cn.ActorID), cn.Upstream)
	}
	c.account(ctx, admin.RouteRevokeConnection, c.who(by), id, detail, start, err)
	return cn, err
}
