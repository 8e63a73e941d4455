package serve

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/session"
)

// requestStates hands out and takes back the requestState of a
// confirmation asked as an input request (CF-6, revision 2026-07-28). The
// client holds the state between the two requests, so it is sealed: an
// HMAC over what it binds — the actor, the tool, the arguments, the
// confirm token of the preview — with an expiry and a nonce spent on first
// use. A state that is forged, altered, expired, replayed, too large, or
// brought by another actor or for other arguments runs nothing.
type requestStates struct {
	key []byte
	ttl time.Duration

	mu sync.Mutex
	// spent are the nonces used, until their state would have expired.
	spent map[string]time.Time

	// relays are the calls of 2026-07-28 clients waiting for a client's
	// answer to their upstream's request (modern_relay.go).
	relays relayTable
	// inflight are the modern tools/calls in flight, for a
	// notifications/cancelled to name (modern_cancel.go).
	inflight modernInflight
}

// maxRequestState bounds a requestState the gateway reads; its own are
// about 400 bytes.
const maxRequestState = 2048

// requestStateTTL is how long a handed-out state stays good: long enough
// for a user to read the question.
const requestStateTTL = 10 * time.Minute

func newRequestStates(key []byte) *requestStates {
	if len(key) == 0 {
		// Without a shared key, states are good on this gateway only.
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("toolgate requestState v1"))
	return &requestStates{key: mac.Sum(nil), ttl: requestStateTTL, spent: map[string]time.Time{}}
}

// stateBody is what a requestState binds.
type stateBody struct {
	Actor  string `json:"a"`
	Tenant string `json:"n,omitempty"`
	Tool   string `json:"t"`
	Args   string `json:"h"` // SHA-256 of the canonical arguments
	Token  string `json:"k,omitempty"`
	// Relay and Input name a call waiting for the client's answer to an
	// upstream's request, and that request's key (modern_relay.go).
	Relay string `json:"p,omitempty"`
	Input string `json:"i,omitempty"`
	// Replica is the gateway process the relayed call waits in.
	Replica string `json:"g,omitempty"`
	Expires int64  `json:"e"`
	Nonce   string `json:"r"`
}

func argsDigest(c *core.ToolCall) (string, error) {
	canon, err := c.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// seal hands out the state of a confirmation of call c, whose preview
// issued token.
func (s *requestStates) seal(actor core.Actor, c *core.ToolCall, token string) (string, error) {
	digest, err := argsDigest(c)
	if err != nil {
		return "", err
	}
	return s.sealBody(stateBody{Actor: actor.ID, Tenant: actor.Tenant, Tool: c.Tool.Name, Args: digest, Token: token,
		Expires: time.Now().Add(s.ttl).Unix(), Nonce: session.NewID()})
}

func (s *requestStates) sealBody(b stateBody) (string, error) {
	body, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + s.sign(payload), nil
}

func (s *requestStates) sign(payload string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// open takes back a state for call c of actor, with the client's answers
// to the input requests it came with, and reports whether the user
// confirmed, and the preview's token. The state is spent whatever the
// answer.
func (s *requestStates) open(state string, actor core.Actor, c *core.ToolCall, answers map[string]json.RawMessage) (confirmed bool, token string, err error) {
	b, err := s.check(state, actor, c)
	if err != nil {
		return false, "", err
	}
	if b.Relay != "" {
		return false, "", errors.New("requestState refused: it was handed out for an upstream's request, not a confirmation; nothing ran")
	}
	if !s.spend(b.Nonce, time.Unix(b.Expires, 0), time.Now()) {
		return false, "", errors.New("requestState refused: already used; nothing ran — call the tool again without it")
	}
	answer, ok := answers[confirmInputKey]
	if !ok {
		return false, "", fmt.Errorf("inputResponses has no answer %q to the confirmation asked; nothing ran", confirmInputKey)
	}
	var res struct {
		Action  mcpgo.ElicitationResponseAction `json:"action"`
		Content struct {
			Confirm bool `json:"confirm"`
		} `json:"content"`
	}
	if err := json.Unmarshal(answer, &res); err != nil {
		return false, "", fmt.Errorf("inputResponses.%s is not an elicitation result: %v; nothing ran", confirmInputKey, err)
	}
	return res.Action == mcpgo.ElicitationResponseActionAccept && res.Content.Confirm, b.Token, nil
}

// check reads a state the client brought back for call c of actor: it
// must be one this gateway sealed, unexpired, and bound to the same actor,
// tool and arguments. It spends nothing.
func (s *requestStates) check(state string, actor core.Actor, c *core.ToolCall) (stateBody, error) {
	b, err := s.unseal(state)
	if err != nil {
		return b, err
	}
	if time.Now().Unix() > b.Expires {
		return b, errors.New("requestState refused: expired; nothing ran — call the tool again without it")
	}
	digest, err := argsDigest(c)
	if err != nil || b.Actor != actor.ID || b.Tenant != actor.Tenant || b.Tool != c.Tool.Name || b.Args != digest {
		return b, errors.New("requestState refused: it was handed out for another caller, tool or arguments; nothing ran")
	}
	return b, nil
}

// unseal reads a state this gateway sealed: within the size bound, its
// signature good, its body readable. It checks no binding and spends
// nothing.
func (s *requestStates) unseal(state string) (stateBody, error) {
	var b stateBody
	if len(state) > maxRequestState {
		return b, fmt.Errorf("requestState refused: %d bytes, at most %d; nothing ran", len(state), maxRequestState)
	}
	payload, sig, ok := strings.Cut(state, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.sign(payload))) {
		return b, errors.New("requestState refused: not one this gateway handed out; nothing ran — call the tool again without it")
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(raw, &b) != nil {
		return b, errors.New("requestState refused: unreadable; nothing ran")
	}
	return b, nil
}

// spend marks nonce used until expires; false if it was already.
func (s *requestStates) spend(nonce string, expires, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, until := range s.spent {
		if now.After(until) {
			delete(s.spent, n)
		}
	}
	if _, used := s.spent[nonce]; used {
		return false
	}
	s.spent[nonce] = expires
	return true
}
