package gateway_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/auth/upstreamoauth"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/oidctest"
)

// What the public origin answers for the metadata document.
const (
	docServed   = iota // the gateway's own
	docMissing         // 404: gateway.publicUrl does not lead to the gateway
	docTampered        // the gateway's, with another client_id
)

// metadataFront is the gateway's public https origin, in front of its
// handler: it counts the requests for the metadata document and the
// documents of the gateway's own it answered, and can answer that route
// as a broken deployment would.
type metadataFront struct {
	gw      atomic.Pointer[http.Handler]
	doc     atomic.Int32
	asked   atomic.Int32
	fetches atomic.Int32
}

func (f *metadataFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := f.gw.Load()
	if h == nil {
		http.Error(w, "the gateway has not started", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path != upstreamoauth.Path+"/client.json" {
		(*h).ServeHTTP(w, r)
		return
	}
	f.asked.Add(1)
	switch f.doc.Load() {
	case docMissing:
		http.NotFound(w, r)
	case docTampered:
		rec := httptest.NewRecorder()
		(*h).ServeHTTP(rec, r)
		var md map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &md); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		md["client_id"] = "https://attacker.example/client.json"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(md)
	default:
		f.fetches.Add(1)
		(*h).ServeHTTP(w, r)
	}
}

var (
	connectForm = regexp.MustCompile(`<form[^>]*method="post"[^>]*action="([^"]+)"`)
	hiddenField = regexp.MustCompile(`<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"`)
)

// openConnect opens a connect URL in b up to the authorization server's
// answer, continuing on the gateway's connect page where there is one,
// and returns the last response and its page.
func openConnect(t *testing.T, b *http.Client, link string) (*http.Response, string) {
	t.Helper()
	resp, err := b.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := connectForm.FindSubmatch(body); m != nil && resp.Request.URL.Path == upstreamoauth.Path+"/connect" {
		action, _ := resp.Request.URL.Parse(string(m[1]))
		form := url.Values{}
		for _, h := range hiddenField.FindAllSubmatch(body, -1) {
			form.Set(string(h[1]), string(h[2]))
		}
		if resp, err = b.PostForm(action.String(), form); err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	return resp, string(body)
}

// UI-1: an upstream whose authorization server knows clients only by
// their Client ID Metadata Document — no registration, no pre-registered
// client — and fetches https client ids only. The gateway's public URL is
// https on loopback (the provider trusts its test CA); its client id is
// its client.json URL there. While that URL answers no document, or one
// naming another client id, the provider refuses the authorization request
// (invalid_client) without sending the browser back, and nothing is
// stored. Once it answers the gateway's own document, alice signs in, her
// token names the document's URL as its client, and her call reaches the
// upstream — a second toolgate checking the provider's JWTs — as alice.
func TestPerActorUpstreamByClientMetadataDocument(t *testing.T) {
	ctx := testCtx(t)
	front := &metadataFront{}
	ts := httptest.NewUnstartedServer(front)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	issuer := oidctest.Start(t, "CIMD=1", "NODE_EXTRA_CA_CERTS="+ca)
	var as struct {
		CIMD         bool   `json:"client_id_metadata_document_supported"`
		Registration string `json:"registration_endpoint"`
	}
	if err := getJSON(issuer+"/.well-known/oauth-authorization-server", &as); err != nil || !as.CIMD || as.Registration != "" {
		t.Fatalf("the provider's metadata: %+v, %v; want metadata documents and no registration", as, err)
	}
	up := upstreamGateway(t, issuer)

	port := peers.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	yaml := frontYAML(port, t.TempDir()+"/front.db", "http://"+up.Addr()+"/mcp", "", aliceOAuthKey, bobOAuthKey)
	plain := "publicUrl: " + base + "\n"
	if !strings.Contains(yaml, plain) {
		t.Fatalf("frontYAML has no %q", plain)
	}
	g := newGateway(t, loadConfig(t, strings.Replace(yaml, plain, "publicUrl: "+ts.URL+"\n", 1)), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h := g.Handler()
	front.gw.Store(&h)
	m := g.UpstreamOAuth()
	clientID := ts.URL + upstreamoauth.Path + "/client.json"
	if got := m.ClientMetadataURL(); got != clientID {
		t.Fatalf("the metadata document's URL is %s, want %s", got, clientID)
	}

	b := oidctest.Browser(t)
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	b.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}
	const tool, upTool = "crm_notes_list_notes", "notes_list_notes"
	alice := connect(t, ctx, base+"/mcp", aliceOAuthKey)
	waitServed(t, ctx, alice, []string{"crm_connect"}, nil)
	link := func() string {
		t.Helper()
		res := call(t, ctx, alice, "crm_connect", nil)
		u := connectURLRE.FindString(resultText(res))
		if !res.IsError || !strings.HasPrefix(u, ts.URL+"/") {
			t.Fatalf("crm_connect answered %v %q; want a connect URL under %s", res.IsError, resultText(res), ts.URL)
		}
		return u
	}

	for _, c := range []struct {
		name string
		doc  int32
		want string
	}{
		{"no document", docMissing, "client_id metadata document fetch failed"},
		{"another client's document", docTampered, "client_id metadata document client_id does not match the expected value"},
	} {
		front.doc.Store(c.doc)
		asked := front.asked.Load()
		resp, page := openConnect(t, b, link())
		if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Request.URL.String(), issuer+"/") ||
			!strings.Contains(page, "invalid_client") || !strings.Contains(page, c.want) {
			t.Fatalf("%s: %s answered %d, want the provider's refusal naming %q:\n%s", c.name, resp.Request.URL, resp.StatusCode, c.want, page)
		}
		if front.asked.Load() == asked {
			t.Fatalf("%s: the provider refused without asking for the document", c.name)
		}
		if conns, err := m.Connections(ctx); err != nil || len(conns) != 0 {
			t.Fatalf("%s: connections %+v, %v; want none", c.name, conns, err)
		}
		if _, _, err := m.Token(ctx, "crm", "alice"); !errors.Is(err, core.ErrNotConnected) {
			t.Fatalf("%s: alice's token: %v", c.name, err)
		}
	}
	if n := front.fetches.Load(); n != 0 {
		t.Fatalf("the gateway's own document was served %d times while it was broken", n)
	}

	front.doc.Store(docServed)
	cb := oidctest.SignIn(t, b, link(), "alice")
	if code, page := oidctest.Open(t, b, cb); code != http.StatusOK || !strings.Contains(page, "Connected") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
	if front.fetches.Load() == 0 {
		t.Fatal("the provider signed alice in without fetching the gateway's metadata document")
	}
	tok, _, err := m.Token(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if claims := jwtClaims(t, tok); claims["client_id"] != clientID || claims["sub"] != "alice" {
		t.Fatalf("alice's access token names client %v and subject %v; want %s and alice", claims["client_id"], claims["sub"], clientID)
	}
	if res := call(t, ctx, alice, "crm_connect", nil); res.IsError {
		t.Fatalf("crm_connect after connecting: %q", resultText(res))
	}
	waitServed(t, ctx, alice, []string{tool}, []string{"crm_connect"})
	if res := call(t, ctx, alice, tool, nil); res.IsError {
		t.Fatalf("alice's call: %q", resultText(res))
	}
	if got := auditActors(t, up, upTool); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("the upstream audited %q, want alice", got)
	}
}

// getJSON decodes what a GET of u answers.
func getJSON(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", u, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
