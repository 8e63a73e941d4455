package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
)

// oauthConsoleGateway is a started gateway with a perActor oauth upstream
// nobody has connected yet (its server is not reached before an actor
// connects) and the admin API.
func oauthConsoleGateway(t *testing.T) *gateway.Gateway {
	t.Helper()
	cfg := loadConfig(t, withAdmin(fmt.Sprintf(`gateway:
  listen: 127.0.0.1:0
  publicUrl: https://tools.example.com
  credentialsKey: %s
  store: %q
  review: {mode: "off"}
  confirm:
    secret: ${SECRET}
endpoints:
  - path: /mcp
    auth:
      apiKeys:
        - key: %s
          actor: {id: alice}
upstreams:
  - name: crm
    url: http://127.0.0.1:1/mcp
    transport: http
    oauth:
      credentials: perActor
`, credentialsKey, t.TempDir()+"/gw.db", aliceOAuthKey)))
	g := newGateway(t, cfg, nil)
	if err := g.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return g
}

// storeConnection puts a connection in the gateway's store as a connect
// would, its sealed part holding text no console may show.
func storeConnection(t *testing.T, g *gateway.Gateway, id, actor string) {
	t.Helper()
	cs, ok := g.Store().(core.ConnectionStore)
	if !ok {
		t.Fatalf("the store %T keeps no connections", g.Store())
	}
	now := time.Now().UTC().Truncate(time.Second)
	if _, err := cs.PutConnection(context.Background(), core.Connection{ID: id, Upstream: "crm", ActorID: actor, Scopes: []string{"crm.read"},
		Expiry: now.Add(time.Hour), CreatedAt: now, Sealed: []byte("SEALED-TOKEN-TEXT"), KeyID: "SEALED-KEY"}); err != nil {
		t.Fatal(err)
	}
}

func revokeAudit(t *testing.T, g *gateway.Gateway, id string) []core.AuditRecord {
	t.Helper()
	recs, err := g.Store().Audit(context.Background(), core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var out []core.AuditRecord
	for _, r := range recs {
		if r.Tool == "revoke_connection" && r.RemoteName == id {
			out = append(out, r)
		}
	}
	return out
}

// UI-2, UI-3, CO-9: a console lists and revokes a stored connection,
// in process and attached over the admin API alike: Info names the oauth
// upstream's credential scope; the list carries no token; a revoke is
// published as connection.changed (which crosses the event stream to an
// attached console) and audited as the operator's action, like the CLI's;
// an unknown id fails as no such connection.
func TestConsoleListsAndRevokesConnections(t *testing.T) {
	ctx := testCtx(t)
	g := oauthConsoleGateway(t)
	storeConnection(t, g, "conn_in1", "alice")

	con := g.Console()
	info, err := con.Info(ctx)
	if err != nil || info.OAuth["crm"] != "perActor" {
		t.Fatalf("Info: %+v, %v", info.OAuth, err)
	}
	list, err := con.Connections(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "conn_in1" || list[0].ActorID != "alice" || list[0].Sealed != nil || list[0].KeyID != "" {
		t.Fatalf("Connections: %+v, %v", list, err)
	}
	_, sub, err := con.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	got, err := con.RevokeConnection(ctx, "conn_in1", "carol")
	if err != nil || got.ID != "conn_in1" || got.Sealed != nil {
		t.Fatalf("RevokeConnection: %+v, %v", got, err)
	}
	nextEvent(t, ctx, sub, "connection.changed", func(d core.EventData) bool {
		cc, ok := d.(core.ConnectionChanged)
		return ok && cc.Change == "revoked" && cc.Connection.ID == "conn_in1"
	})
	nextEvent(t, ctx, sub, "the operator action", func(d core.EventData) bool {
		oa, ok := d.(core.OperatorAction)
		return ok && oa.Operator == "carol" && oa.Action == "revoke_connection" && oa.Target == "conn_in1" && oa.Detail == "alice on crm"
	})
	if recs := revokeAudit(t, g, "conn_in1"); len(recs) != 1 || recs[0].ActorID != "carol" || recs[0].Endpoint != gateway.AdminEndpoint || recs[0].Outcome != "ok" {
		t.Fatalf("audit of the console's revoke: %+v", recs)
	}
	if list, err := con.Connections(ctx); err != nil || len(list) != 0 {
		t.Fatalf("after revoke: %+v, %v", list, err)
	}
	if _, err := con.RevokeConnection(ctx, "conn_in1", "carol"); !errors.Is(err, core.ErrNoConnection) {
		t.Fatalf("second revoke: %v", err)
	}

	// Attached: the same through the admin API, as the key's operator.
	storeConnection(t, g, "conn_at2", "bob")
	client, err := admin.NewClient("http://"+g.AdminAddr(), adminAliceKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	remote := admin.NewRemoteConsole(client, nil)
	rinfo, err := remote.Info(ctx)
	if err != nil || rinfo.OAuth["crm"] != "perActor" {
		t.Fatalf("attached Info: %+v, %v", rinfo.OAuth, err)
	}
	rlist, err := remote.Connections(ctx)
	if err != nil || len(rlist) != 1 || rlist[0].ID != "conn_at2" || rlist[0].ActorID != "bob" || rlist[0].Sealed != nil {
		t.Fatalf("attached Connections: %+v, %v", rlist, err)
	}
	if b, _ := json.Marshal(rlist); strings.Contains(string(b), "SEALED") {
		t.Fatalf("the listing carries the sealed tokens: %s", b)
	}
	_, rsub, err := remote.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rsub.Close()
	if got, err := remote.RevokeConnection(ctx, "conn_at2", "ignored"); err != nil || got.ActorID != "bob" {
		t.Fatalf("attached RevokeConnection: %+v, %v", got, err)
	}
	nextEvent(t, ctx, rsub, "connection.changed over the admin API", func(d core.EventData) bool {
		cc, ok := d.(core.ConnectionChanged)
		return ok && cc.Change == "revoked" && cc.Connection.ID == "conn_at2" && cc.Connection.ActorID == "bob"
	})
	if recs := revokeAudit(t, g, "conn_at2"); len(recs) != 1 || recs[0].ActorID != "alice" {
		t.Fatalf("audit of the attached revoke: %+v", recs)
	}
	if _, err := remote.RevokeConnection(ctx, "conn_nope", ""); !errors.Is(err, core.ErrNoConnection) {
		t.Fatalf("attached revoke of an unknown id: %v", err)
	}
	if recs := revokeAudit(t, g, "conn_nope"); len(recs) != 1 || recs[0].Outcome != "error" {
		t.Fatalf("audit of the failed revoke: %+v", recs)
	}
}

// UI-3: A gateway without oauth upstreams lists no connections to a console,
// in process and attached, and Info names none.
func TestConsoleConnectionsWithoutOAuth(t *testing.T) {
	ctx := testCtx(t)
	g := newGateway(t, loadConfig(t, withAdmin(gatewayYAML(t.TempDir()+"/gw.db"))), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	client, err := admin.NewClient("http://"+g.AdminAddr(), adminAliceKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// The admin API says so with 404, not as a failure of the gateway.
	var ae *admin.Error
	if _, err := client.Connections(ctx); !errors.As(err, &ae) || ae.Status != 404 || ae.Message != admin.ErrNoOAuth.Error() {
		t.Fatalf("GET /v1/connections without oauth: %v", err)
	}
	for name, con := range map[string]core.Console{"in process": g.Console(), "attached": admin.NewRemoteConsole(client, nil)} {
		list, err := con.Connections(ctx)
		info, ierr := con.Info(ctx)
		if err != nil || list == nil || len(list) != 0 || ierr != nil || info.OAuth != nil {
			t.Errorf("%s: %v %v; info %+v %v", name, list, err, info.OAuth, ierr)
		}
	}
}
