package serve

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/canonjson"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/schema/schematest"
)

// argsCases are arguments with and without the gate's fields, plain and
// unusual.
var argsCases = []string{
	`{}`, `{"a":1}`, ` { "b" : [ 1 , 2.5e-3 , -0 , true , false , null ] , "a" : {"y":"", "x":{}} } `,
	`{"a":1,"a":2}`, `{"a":"\u0041"}`, `{"a\u0041":1}`, `{"n":12345678901234567890,"f":1.0,"e":1E+2}`,
	`{"a":1}x`, ``, `"str"`, `{"confirm":true,"confirmToken":"x","id":7}`, `{"conf\u0069rm":true}`,
	`{"confirm":false,"id":7}`, `{"id":7,"confirmToken":"t"}`,
}

// oldArgsHash is the hash as computed before the shortcut: always through
// a full parse of the gate's fields. Arguments whose gate fields are
// malformed are hashed as sent.
func oldArgsHash(e *Endpoint, args json.RawMessage) (string, bool, string) {
	toolArgs, confirm, token, err := slowConfirmArgs(args)
	if err != nil {
		toolArgs = args
	}
	canon, err := canonjson.CanonicalJSON(toolArgs)
	if err != nil {
		canon = toolArgs
	}
	if e.opts.AuditKey != nil {
		m := hmac.New(sha256.New, e.opts.AuditKey)
		m.Write(canon)
		return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil)), confirm, token
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), confirm, token
}

func checkArgsHash(t *testing.T, e *Endpoint, args string) {
	t.Helper()
	wantHash, wantConfirm, wantToken := oldArgsHash(e, json.RawMessage(args))
	c := parsedCall(args)
	if got := e.argsHash(c); got != wantHash || c.Confirm != wantConfirm || c.Token != wantToken {
		t.Errorf("%q: hash %s confirm %v token %q; want %s %v %q", args, got, c.Confirm, c.Token, wantHash, wantConfirm, wantToken)
	}
}

// parsedCall is args as the endpoint parses a call: the gate's fields split
// off once.
func parsedCall(args string) *core.ToolCall {
	c := &core.ToolCall{Raw: json.RawMessage(args)}
	confirm.Split(c)
	return c
}

// slowConfirmArgs is the gate's field split without the shortcut past the
// parse.
func slowConfirmArgs(args json.RawMessage) (json.RawMessage, bool, string, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage(`{}`), false, "", nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args, false, "", nil
	}
	c, hasC := m["confirm"]
	t, hasT := m["confirmToken"]
	if !hasC && !hasT {
		return args, false, "", nil
	}
	var confirm bool
	var token string
	if hasC && json.Unmarshal(c, &confirm) != nil {
		return nil, false, "", errors.New("confirm")
	}
	if hasT && json.Unmarshal(t, &token) != nil {
		return nil, false, "", errors.New("confirmToken")
	}
	delete(m, "confirm")
	delete(m, "confirmToken")
	out, err := json.Marshal(m)
	return out, confirm, token, err
}

// OP-6: the audit's argument hash is exactly what it was before the
// shortcut past core.ConfirmArgs, for canonical, reorderable and unusual
// documents alike, keyed or not. (core's tests pin CanonicalJSON's fast
// path against its decoding one.)
func TestAuditArgsHashUnchangedOP6(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("audit-key")} {
		e := &Endpoint{opts: EndpointOptions{AuditKey: key}}
		for _, c := range argsCases {
			checkArgsHash(t, e, c)
		}
		files, _ := filepath.Glob(filepath.Join(schematest.Corpus(), "*", "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checkArgsHash(t, e, string(b))
		}
	}
}

func FuzzAuditArgsHash(f *testing.F) {
	for _, c := range argsCases {
		f.Add(c)
	}
	e := &Endpoint{opts: EndpointOptions{AuditKey: []byte("k")}}
	f.Fuzz(func(t *testing.T, args string) { checkArgsHash(t, e, args) })
}

var benchAuditArgs = json.RawMessage(`{"repo":"toolgate/toolgate","query":"audit queue","limit":20,"labels":["perf","audit"],"state":"open"}`)

// BenchmarkAuditArgsHash is the argument hash of one audited call, with the
// shortcut and as it was.
func BenchmarkAuditArgsHash(b *testing.B) {
	e := &Endpoint{opts: EndpointOptions{AuditKey: []byte("bench-audit-key-0123456789abcdef")}}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = e.argsHash(parsedCall(string(benchAuditArgs)))
		}
	})
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = oldArgsHash(e, benchAuditArgs)
		}
	})
}
