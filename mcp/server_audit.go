package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/core"
)

// audit records one call (OP-6) and publishes it for the activity feed
// (CO-7). Argument values are only ever kept as a hash.
func (e *Endpoint) audit(ctx context.Context, call core.Call, actor core.Actor, name string, kind core.Kind, args json.RawMessage, res core.Result, err error, latency time.Duration) {
	if e.opts.Audit == nil {
		return
	}
	toolArgs, confirm, token := auditConfirmArgs(args)
	rec := core.AuditRecord{
		Time: time.Now(), Endpoint: e.opts.Path, ActorID: actor.ID, Tenant: actor.Tenant, Session: call.Session,
		Tool: name, ArgsHash: e.argsHash(toolArgs), Outcome: outcome(kind, confirm, res, err), Latency: latency, CallID: call.CallID,
	}
	if t, ok := e.opts.Registry.Get(name); ok {
		rec.Source, rec.RemoteName = t.Source, t.RemoteName
	}
	if confirm && token != "" {
		rec.ConfirmTokenID = core.TokenID(token)
	} else if kind == core.KindAction && err == nil {
		rec.ConfirmTokenID = issuedTokenID(res)
	}
	// The caller's context may end the moment the answer is written; the
	// record must still land. A call of an action tool may have changed
	// something, so it is answered only once its record is committed; for
	// the others a store that can queue the record writes it moments later,
	// off the call's path (losing it takes a crash in those moments).
	actx := context.WithoutCancel(ctx)
	if q, ok := e.opts.Audit.(core.AuditQueuer); ok && kind != core.KindAction {
		if aerr := q.QueueAudit(actx, rec); errors.Is(aerr, core.ErrAuditLost) {
			e.opts.Logger.Error("audit records lost", "err", aerr)
		} else if aerr != nil {
			e.opts.Logger.Error("audit record lost", "tool", name, "call", call.CallID, "err", aerr)
		}
	} else if aerr := e.opts.Audit.AppendAudit(actx, rec); aerr != nil {
		e.opts.Logger.Error("audit record lost", "tool", name, "call", call.CallID, "err", aerr)
	}
	e.opts.Registry.Bus().Publish(core.CallFinished{Record: rec})
}

func (e *Endpoint) argsHash(canonicalish json.RawMessage) string {
	canon, ok := appendCanonical(make([]byte, 0, len(canonicalish)), canonicalish)
	if !ok {
		var err error
		if canon, err = core.CanonicalJSON(canonicalish); err != nil {
			canon = canonicalish
		}
	}
	if e.opts.AuditKey != nil {
		m := hmac.New(sha256.New, e.opts.AuditKey)
		m.Write(canon)
		return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// auditConfirmArgs is core.ConfirmArgs without its parse when the gate's
// fields cannot be there: no key can read "confirm" unless those bytes, or
// an escape, appear.
func auditConfirmArgs(args json.RawMessage) (toolArgs json.RawMessage, confirm bool, token string) {
	if len(bytes.TrimSpace(args)) > 0 && !bytes.Contains(args, []byte("confirm")) && bytes.IndexByte(args, '\\') < 0 {
		return args, false, ""
	}
	toolArgs, confirm, token, _ = core.ConfirmArgs(args)
	return toolArgs, confirm, token
}

// appendCanonical appends the form core.CanonicalJSON gives raw, for the
// common documents: strings without escapes or characters encoding/json
// would escape, no duplicate keys. For anything else ok is false and the
// caller asks core.CanonicalJSON, whose output this is byte for byte
// otherwise (members sorted by key bytes, no whitespace, numbers and
// strings as written).
func appendCanonical(dst, raw []byte) (out []byte, ok bool) {
	p := canonParser{src: raw}
	p.skipSpace()
	if dst, ok = p.value(dst, 0); !ok {
		return nil, false
	}
	p.skipSpace()
	return dst, p.i == len(p.src)
}

type canonParser struct {
	src []byte
	i   int
}

// maxCanonDepth leaves deep documents to core.CanonicalJSON.
const maxCanonDepth = 64

func (p *canonParser) skipSpace() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *canonParser) value(dst []byte, depth int) ([]byte, bool) {
	if p.i >= len(p.src) || depth > maxCanonDepth {
		return nil, false
	}
	switch c := p.src[p.i]; {
	case c == '{':
		return p.object(dst, depth)
	case c == '[':
		p.i++
		dst = append(dst, '[')
		p.skipSpace()
		if p.i < len(p.src) && p.src[p.i] == ']' {
			p.i++
			return append(dst, ']'), true
		}
		for {
			var ok bool
			if dst, ok = p.value(dst, depth+1); !ok {
				return nil, false
			}
			p.skipSpace()
			if p.i >= len(p.src) {
				return nil, false
			}
			switch p.src[p.i] {
			case ',':
				p.i++
				dst = append(dst, ',')
				p.skipSpace()
			case ']':
				p.i++
				return append(dst, ']'), true
			default:
				return nil, false
			}
		}
	case c == '"':
		s, ok := p.str()
		return append(dst, s...), ok
	case c == '-' || c >= '0' && c <= '9':
		return p.number(dst)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.src[p.i:], []byte(lit)) {
				p.i += len(lit)
				return append(dst, lit...), true
			}
		}
		return nil, false
	}
}

type canonMember struct {
	key   []byte // the key as written, quotes included
	value []byte // the value in canonical form
}

func (p *canonParser) object(dst []byte, depth int) ([]byte, bool) {
	p.i++ // {
	p.skipSpace()
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		return append(dst, "{}"...), true
	}
	var members []canonMember
	for {
		if p.i >= len(p.src) || p.src[p.i] != '"' {
			return nil, false
		}
		key, ok := p.str()
		if !ok {
			return nil, false
		}
		p.skipSpace()
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.skipSpace()
		val, ok := p.value(nil, depth+1)
		if !ok {
			return nil, false
		}
		members = append(members, canonMember{key, val})
		p.skipSpace()
		if p.i >= len(p.src) {
			return nil, false
		}
		if p.src[p.i] == '}' {
			p.i++
			break
		}
		if p.src[p.i] != ',' {
			return nil, false
		}
		p.i++
		p.skipSpace()
	}
	// Keys hold no escapes, so their bytes (quotes aside) order like the
	// decoded keys core.CanonicalJSON sorts. Duplicates are left to it.
	slices.SortFunc(members, func(a, b canonMember) int {
		return bytes.Compare(a.key[1:len(a.key)-1], b.key[1:len(b.key)-1])
	})
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			if bytes.Equal(m.key, members[i-1].key) {
				return nil, false
			}
			dst = append(dst, ',')
		}
		dst = append(dst, m.key...)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}'), true
}

// str returns the string at p.i, quotes included, if encoding/json would
// write its value back the same: no escapes, no control characters, valid
// UTF-8 without U+2028 or U+2029.
func (p *canonParser) str() ([]byte, bool) {
	start := p.i
	p.i++
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '"':
			p.i++
			return p.src[start:p.i], true
		case c == '\\' || c < 0x20:
			return nil, false
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, n := utf8.DecodeRune(p.src[p.i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				return nil, false
			}
			p.i += n
		}
	}
	return nil, false
}

// number copies a JSON number as written: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *canonParser) number(dst []byte) ([]byte, bool) {
	start := p.i
	digits := func() bool {
		n := p.i
		for p.i < len(p.src) && p.src[p.i] >= '0' && p.src[p.i] <= '9' {
			p.i++
		}
		return p.i > n
	}
	if p.src[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.src) && p.src[p.i] == '0':
		p.i++
	case !digits():
		return nil, false
	}
	if p.i < len(p.src) && p.src[p.i] == '.' {
		p.i++
		if !digits() {
			return nil, false
		}
	}
	if p.i < len(p.src) && (p.src[p.i] == 'e' || p.src[p.i] == 'E') {
		p.i++
		if p.i < len(p.src) && (p.src[p.i] == '+' || p.src[p.i] == '-') {
			p.i++
		}
		if !digits() {
			return nil, false
		}
	}
	return append(dst, p.src[start:p.i]...), true
}

// outcome names what happened in the audit's words.
func outcome(kind core.Kind, confirm bool, res core.Result, err error) string {
	var refused *core.RefusedError
	var invalid *core.ValidationError
	switch {
	case errors.As(err, &refused):
		return "refused"
	case errors.As(err, &invalid):
		return "invalid"
	case errors.Is(err, core.ErrUnknownTool), errors.Is(err, core.ErrNotPermitted), errors.Is(err, core.ErrToolDisabled):
		return "not-found"
	case errors.Is(err, core.ErrOutcomeUnknown):
		return "outcome-unknown"
	case err != nil:
		return "failed"
	case kind == core.KindAction && !confirm && issuedTokenID(res) != "":
		return "preview"
	case res.IsError:
		return "error"
	}
	return "ok"
}

// issuedTokenID finds the confirm token a preview answer carries.
func issuedTokenID(res core.Result) string {
	var body struct {
		StructuredContent struct {
			ConfirmToken string `json:"confirmToken"`
		} `json:"structuredContent"`
	}
	if json.Unmarshal(res.JSON, &body) != nil {
		return ""
	}
	return core.TokenID(body.StructuredContent.ConfirmToken)
}
