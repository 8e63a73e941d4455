package mcp

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
	Actor   string `json:"a"`
	Tenant  string `json:"n,omitempty"`
	Tool    string `json:"t"`
	Args    string `json:"h"` // SHA-256 of the canonical arguments
	Token   string `json:"k"`
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
	body, err := json.Marshal(stateBody{Actor: actor.ID, Tenant: actor.Tenant, Tool: c.Tool.Name, Args: digest, Token: token,
		Expires: time.Now().Add(s.ttl).Unix(), Nonce: randomID()})
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
	if len(state) > maxRequestState {
		return false, "", fmt.Errorf("requestState refused: %d bytes, at most %d; nothing ran", len(state), maxRequestState)
	}
	payload, sig, ok := strings.Cut(state, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.sign(payload))) {
		return false, "", errors.New("requestState refused: not one this gateway handed out; nothing ran — call the tool again without it")
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	var b stateBody
	if err != nil || json.Unmarshal(raw, &b) != nil {
		return false, "", errors.New("requestState refused: unreadable; nothing ran")
	}
	now := time.Now()
	if now.Unix() > b.Expires {
		return false, "", errors.New("requestState refused: expired; nothing ran — call the tool again without it")
	}
	digest, err := argsDigest(c)
	if err != nil || b.Actor != actor.ID || b.Tenant != actor.Tenant || b.Tool != c.Tool.Name || b.Args != digest {
		return false, "", errors.New("requestState refused: it was handed out for another caller, tool or arguments; nothing ran")
	}
	if !s.spend(b.Nonce, time.Unix(b.Expires, 0), now) {
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
