package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/internal/admin"
)

// AdminOptions tune the admin API's server (CO-9); the zero value is the
// admin package's defaults. Tests shorten them.
type AdminOptions struct {
	HeartbeatInterval time.Duration
	WriteTimeout      time.Duration
	MaxStreams        int
}

// adminShutdownWait bounds how long Close waits for admin requests in
// flight once the streams are told to end; the rest are cut.
const adminShutdownWait = 5 * time.Second

// adminAPI is the admin listener and its server.
type adminAPI struct {
	ln     net.Listener
	api    *admin.Server
	srv    *http.Server
	socket string // the unix socket file Close removes; "" for TCP
	served chan struct{}
}

// bindAdmin binds gateway.admin.listen, if the config has an admin
// section, so that a taken port or a live socket fails New.
func (g *Gateway) bindAdmin() error {
	a := g.cfg.Gateway.Admin
	if a == nil {
		return nil
	}
	keys := make([]admin.Key, 0, len(a.Keys))
	for _, k := range a.Keys {
		keys = append(keys, admin.Key{Key: k.Key.Reveal(), Operator: k.Operator})
	}
	api, err := admin.NewServer(admin.Options{
		Backend: adminBackend{g}, Keys: keys, Logger: g.log,
		HeartbeatInterval: g.opts.Admin.HeartbeatInterval,
		WriteTimeout:      g.opts.Admin.WriteTimeout,
		MaxStreams:        g.opts.Admin.MaxStreams,
	})
	if err != nil {
		return err
	}
	ad := &adminAPI{api: api}
	if sock := a.UnixSocket(); sock != "" {
		ad.ln, err = listenUnix(sock)
		ad.socket = sock
	} else {
		ad.ln, err = net.Listen("tcp", a.Listen)
	}
	if err != nil {
		return fmt.Errorf("admin listen: %w", err)
	}
	g.admin = ad
	return nil
}

// listenUnix binds a unix socket at path, readable and writable by this
// user only. A socket file left by a process that died is replaced; one a
// live process answers on is an error. The socket is bound under a private
// directory, made 0600 there, then renamed into place, so it is never
// reachable with wider permissions.
func listenUnix(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s: another process is listening on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".toolgate-admin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	// The file moves: Close would unlink the old name. bindAdmin's owner
	// removes the real one.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		_ = ln.Close()
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return ln, nil
}

// serveAdmin serves the admin API on its bound listener, once.
func (g *Gateway) serveAdmin() {
	ad := g.admin
	if ad == nil || ad.srv != nil {
		return
	}
	// No read or write timeout on the server: the event stream lives long.
	// The admin server sets a deadline per request and per frame instead.
	ad.srv = &http.Server{Handler: ad.api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: g.cfg.Gateway.IdleTimeout,
		ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelDebug)}
	ad.served = make(chan struct{})
	srv, ln := ad.srv, ad.ln
	go func() {
		defer close(ad.served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("admin API stopped", "err", err)
		}
	}()
	g.log.Info("admin API serving", "listen", g.AdminAddr(), "operators", len(g.cfg.Gateway.Admin.Keys))
}

// closeAdmin ends the admin API's event streams, waits a moment for its
// requests in flight, then closes it and removes its socket file.
func (g *Gateway) closeAdmin(ctx context.Context) {
	ad := g.admin
	if ad == nil {
		return
	}
	ad.api.Close()
	if ad.srv != nil {
		wait, cancel := context.WithTimeout(ctx, adminShutdownWait)
		if err := ad.srv.Shutdown(wait); err != nil {
			_ = ad.srv.Close()
		}
		cancel()
		<-ad.served
	} else {
		_ = ad.ln.Close()
	}
	if ad.socket != "" {
		_ = os.Remove(ad.socket)
	}
}

// AdminAddr is the admin API's address: host:port, or unix:/path for a
// socket; "" without one.
func (g *Gateway) AdminAddr() string {
	if g.admin == nil {
		return ""
	}
	if g.admin.socket != "" {
		return config.AdminUnixPrefix + g.admin.socket
	}
	return g.admin.ln.Addr().String()
}

// adminBackend is what the admin server needs of the gateway.
type adminBackend struct{ g *Gateway }

var _ admin.Backend = adminBackend{}

func (b adminBackend) ConsoleAs(operator string) core.Console { return b.g.ConsoleAs(operator) }

func (b adminBackend) Snapshot() core.Snapshot { return b.g.reg.Bus().Snapshot() }

func (b adminBackend) Confirmations() []core.PendingConfirmation {
	if b.g.approvals == nil {
		return nil
	}
	return b.g.approvals.Pending()
}

func (b adminBackend) Sessions() []core.Session { return b.g.allSessions() }

func (b adminBackend) Audit(ctx context.Context, q core.AuditQuery) ([]core.AuditRecord, error) {
	return b.g.store.Audit(ctx, q)
}

var _ admin.PolicyTester = adminBackend{}

// TryPolicy implements admin.PolicyTester over the running config and
// registry (PO-4). What the asker got wrong is a 400.
func (b adminBackend) TryPolicy(ctx context.Context, req admin.PolicyTestRequest) (policy.Trial, error) {
	actor, ok := ConfigActor(b.g.Config(), req.Actor)
	if !ok {
		actor = core.Actor{ID: req.Actor}
	}
	if req.Roles != nil {
		actor.Roles = *req.Roles
	}
	if req.Tenant != nil {
		actor.Tenant = *req.Tenant
	}
	args := req.Args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	trial, err := b.g.TryPolicy(ctx, req.Endpoint, actor, req.Tool, args, req.Via, req.SessionLabels)
	if err != nil {
		return trial, &admin.Error{Status: http.StatusBadRequest, Code: admin.CodeBadRequest, Message: err.Error()}
	}
	return trial, nil
}
