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
// remembered (bounded) and, over a shared store, broadcast to the other
// replicas; an id older than the adoption window (a day, or the idle
// timeout if longer) is not continued elsewhere, so an ended one stays
// ended once its tombstone is forgotten.
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
// request's actor, not have been ended, and be within the adoption window
// (tombstones). mcp-go's session is made by an
// initialize carrying the sealed protocol, client info and capabilities, as
// the client sent it where it opened the session. It reports whether the
// request was answered (a cap refused it).
func (e *Endpoint) adopt(w http.ResponseWriter, r *http.Request, body []byte, id string, actor core.Actor) (answered bool, err error) {
	c, ok := e.seal.open(id)
	if !ok || c.Path != e.opts.Path || c.Actor != actor.ID || c.Tenant != actor.Tenant || e.ids.ended(id) ||
		e.ids.gone.tooOld(time.Unix(c.Issued, 0), time.Now()) {
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
// number and in time. What closes the gap a forgotten tombstone would open
// is the issue time sealed into every id: an id older than adoptWindow is
// never continued by a replica that does not hold it, and a tombstone is
// kept longer than that after the end, so by the time it is forgotten its
// id is too old anyway. A tombstone dropped early to make room raises a
// floor instead: no id issued at or before the dropped one's issue time is
// adopted again (the replicas holding such sessions keep serving them).
const maxTombstones = 1 << 16

// minAdoptWindow is the least age at which a sealed id stops being
// continued elsewhere; a longer idle timeout lengthens it. A client past it
// whose replica went away initializes again.
const minAdoptWindow = 24 * time.Hour

// clockSlack covers replicas whose clocks disagree about an issue time.
const clockSlack = 5 * time.Minute

// adoptWindow is how old a sealed id may be and still be continued by a
// replica that does not hold it: idle an idle timeout, a session would have
// expired anyway.
func adoptWindow(idle time.Duration) time.Duration {
	return max(idle, minAdoptWindow)
}

type tombstones struct {
	window time.Duration // ids older than this are not adopted
	ttl    time.Duration // how long a tombstone is kept: longer than window
	// issued reads an id's sealed issue time (false: not a sealed id).
	issued func(id string) (time.Time, bool)

	mu sync.Mutex
	at map[string]tombstone
	// floor: ids issued at or before it are refused, since a tombstone of
	// one that old was dropped to make room.
	floor time.Time
}

type tombstone struct{ until, issued time.Time }

func (t *tombstones) init(idle time.Duration, seal *sessionSeal) {
	t.window = adoptWindow(idle)
	t.ttl = t.window + clockSlack
	t.issued = func(id string) (time.Time, bool) {
		if seal == nil {
			return time.Time{}, false
		}
		c, ok := seal.open(id)
		return time.Unix(c.Issued, 0), ok
	}
}

// add records id as ended; false if it was already.
func (t *tombstones) add(id string, now time.Time) bool {
	issued, _ := t.issued(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at == nil {
		t.at = map[string]tombstone{}
	}
	if ts, ok := t.at[id]; ok && now.Before(ts.until) {
		return false
	}
	if len(t.at) >= maxTombstones {
		var oldest string
		var oldestIssued time.Time
		for k, ts := range t.at {
			if !now.Before(ts.until) {
				delete(t.at, k)
			} else if oldest == "" || ts.issued.Before(oldestIssued) {
				oldest, oldestIssued = k, ts.issued
			}
		}
		if len(t.at) >= maxTombstones {
			delete(t.at, oldest)
			if oldestIssued.After(t.floor) {
				t.floor = oldestIssued
			}
		}
	}
	t.at[id] = tombstone{until: now.Add(t.ttl), issued: issued}
	return true
}

func (t *tombstones) has(id string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts, ok := t.at[id]
	if ok && !now.Before(ts.until) {
		delete(t.at, id)
		return false
	}
	return ok
}

// tooOld reports whether an id issued then may no longer be adopted: past
// the window, or at or before the floor.
func (t *tombstones) tooOld(issued, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return now.Sub(issued) > t.window || !issued.After(t.floor)
}
