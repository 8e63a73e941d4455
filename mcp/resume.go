package mcp

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
)

// Resumable sessions (SV-2, OP-5). A session id is sealed (AES-GCM) under a
// key every replica shares, and carries what a replica needs to continue the
// session it did not open: the endpoint, the actor, the protocol revision and
// the client's info and capabilities. A replica that does not know an id,
// but can open its seal and serves the actor it names, adopts the session as
// if the client had initialized there. This was chosen over session records
// in the database: it costs no round trip per request, and it works on a
// single replica over SQLite too (a restarted gateway continues its
// sessions). What a seal cannot carry is the end of a session: ended ids are
// remembered (bounded, for an idle timeout) and, over a shared store,
// broadcast to the other replicas.
//
// The seal holds the actor, not a hash of the credential: OAuth access
// tokens are replaced within a session's life, and the actor is re-derived
// from the credential on every request anyway (AU-3).

// sealedSession is what a resumable id carries.
type sealedSession struct {
	Path          string          `json:"p"`
	Actor         string          `json:"a"`
	Tenant        string          `json:"t,omitempty"`
	Protocol      string          `json:"v,omitempty"`
	ClientName    string          `json:"cn,omitempty"`
	ClientVersion string          `json:"cv,omitempty"`
	Capabilities  json.RawMessage `json:"c,omitempty"`
	Issued        int64           `json:"iat"`
}

// maxSealedCapabilities bounds the client capabilities an id carries, so
// the id stays a reasonable header; larger ones are left out (the adopted
// session then has none, as for a client that declared none).
const maxSealedCapabilities = 1024

// sealAD binds seals to their use: the same key sealing anything else
// cannot produce a session id.
var sealAD = []byte("toolgate session id v1")

type sessionSeal struct{ aead cipher.AEAD }

func newSessionSeal(key []byte) (*sessionSeal, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sessionSeal{aead: aead}, nil
}

func (s *sessionSeal) seal(c sealedSession) string {
	if len(c.Capabilities) > maxSealedCapabilities {
		c.Capabilities = nil
	}
	plain, _ := json.Marshal(c)
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, sealAD))
}

func (s *sessionSeal) open(id string) (sealedSession, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return sealedSession{}, false
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], sealAD)
	if err != nil {
		return sealedSession{}, false
	}
	var c sealedSession
	if json.Unmarshal(plain, &c) != nil {
		return sealedSession{}, false
	}
	return c, true
}

// sealedFor is the id a request opening a session gets: body is an
// initialize's (or nil, for a GET stream).
func (e *Endpoint) sealedFor(actor core.Actor, body []byte) string {
	c := sealedSession{Path: e.opts.Path, Actor: actor.ID, Tenant: actor.Tenant, Issued: time.Now().Unix()}
	var init struct {
		Params struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
			ClientInfo      struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"clientInfo"`
		} `json:"params"`
	}
	if len(body) > 0 && json.Unmarshal(body, &init) == nil {
		c.Protocol = init.Params.ProtocolVersion
		c.Capabilities = init.Params.Capabilities
		c.ClientName, c.ClientVersion = init.Params.ClientInfo.Name, init.Params.ClientInfo.Version
	}
	return e.seal.seal(c)
}

// mintKey carries the id mcp-go is to mint for this request.
type mintKey struct{}

// idResolver hands mcp-go, per request, the manager minting the id the
// endpoint chose for it (sealed, or the one being adopted).
type idResolver struct{ ids *sessionIDs }

func (r idResolver) ResolveSessionIdManager(req *http.Request) server.SessionIdManager {
	if req != nil {
		if id, ok := req.Context().Value(mintKey{}).(string); ok {
			return mintingIDs{r.ids, id}
		}
	}
	return r.ids
}

type mintingIDs struct {
	*sessionIDs
	id string
}

func (m mintingIDs) Generate() string {
	m.add(m.id)
	return m.id
}

// errNotAdopted: the id is not one this endpoint may continue.
var errNotAdopted = errors.New("session cannot be continued here")

// adopt continues, on this replica, a session opened elsewhere (or before a
// restart): id must open under the seal, name this endpoint and the
// request's actor, and not have been ended. mcp-go's session is made by an
// initialize carrying the sealed protocol, client info and capabilities, as
// the client sent it where it opened the session. It reports whether the
// request was answered (a cap refused it).
func (e *Endpoint) adopt(w http.ResponseWriter, r *http.Request, body []byte, id string, actor core.Actor) (answered bool, err error) {
	c, ok := e.seal.open(id)
	if !ok || c.Path != e.opts.Path || c.Actor != actor.ID || c.Tenant != actor.Tenant || e.ids.ended(id) {
		return false, errNotAdopted
	}
	e.adopting.Lock()
	defer e.adopting.Unlock()
	if e.ids.live(id) {
		// Adopted by a request racing this one.
		return false, nil
	}
	slot, err := e.opts.Limits.acquire(actor.ID)
	if err != nil {
		refuseSession(w, r, body, err)
		return true, err
	}
	defer slot.requestDone()
	params := map[string]any{"protocolVersion": c.Protocol, "clientInfo": mcpgo.Implementation{Name: c.ClientName, Version: c.ClientVersion}}
	if len(c.Capabilities) > 0 {
		params["capabilities"] = c.Capabilities
	} else {
		params["capabilities"] = map[string]any{}
	}
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "toolgate-adopt", "method": "initialize", "params": params})
	ctx := context.WithValue(context.WithValue(r.Context(), slotKey{}, slot), mintKey{}, id)
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, e.opts.Path, bytes.NewReader(init))
	req.Header = r.Header.Clone()
	req.Header.Del(server.HeaderKeySessionID)
	req.Header.Del(mcpgo.HeaderProtocolVersion)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Host, req.RemoteAddr = r.Host, r.RemoteAddr
	rec := httptest.NewRecorder()
	e.http.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || e.ids.session(id) == nil {
		e.ids.forget(id)
		e.opts.Logger.Warn("continuing a session failed", "endpoint", e.opts.Path, "status", rec.Code)
		return false, errNotAdopted
	}
	e.opts.Logger.Info("session continued", "endpoint", e.opts.Path, "actor", actor.ID)
	return false, nil
}

// EndedElsewhere is told that another replica ended session id: it is not
// adopted here, and ended if it was (OP-5).
func (e *Endpoint) EndedElsewhere(id string) {
	e.ids.tombstone(id)
	if e.ids.live(id) {
		_ = e.endSession(id)
	}
}

// Tombstones: ended ids, so a seal cannot bring them back. Bounded in
// number and in time — past an idle timeout a session would have expired
// anyway.
const maxTombstones = 1 << 16

// defaultTombstoneTTL is how long ended ids are refused when sessions
// never expire.
const defaultTombstoneTTL = 24 * time.Hour

type tombstones struct {
	mu  sync.Mutex
	ttl time.Duration
	at  map[string]time.Time // id → when it may be forgotten
}

// add records id as ended; false if it was already.
func (t *tombstones) add(id string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at == nil {
		t.at = map[string]time.Time{}
	}
	if until, ok := t.at[id]; ok && now.Before(until) {
		return false
	}
	if len(t.at) >= maxTombstones {
		var oldest string
		var oldestAt time.Time
		for k, until := range t.at {
			if !now.Before(until) {
				delete(t.at, k)
			} else if oldest == "" || until.Before(oldestAt) {
				oldest, oldestAt = k, until
			}
		}
		if len(t.at) >= maxTombstones {
			delete(t.at, oldest)
		}
	}
	t.at[id] = now.Add(t.ttl)
	return true
}

func (t *tombstones) has(id string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	until, ok := t.at[id]
	if ok && !now.Before(until) {
		delete(t.at, id)
		return false
	}
	return ok
}
