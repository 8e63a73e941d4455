package mcp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/core/canonjson"
	"github.com/toolgate/toolgate/core/confirm"
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
// core.ConfirmArgs.
func oldArgsHash(e *Endpoint, args json.RawMessage) (string, bool, string) {
	toolArgs, confirm, token, _ := confirm.ConfirmArgs(args)
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
	toolArgs, confirm, token := auditConfirmArgs(json.RawMessage(args))
	if got := e.argsHash(toolArgs); got != wantHash || confirm != wantConfirm || token != wantToken {
		t.Errorf("%q: hash %s confirm %v token %q; want %s %v %q", args, got, confirm, token, wantHash, wantConfirm, wantToken)
	}
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
		files, _ := filepath.Glob(filepath.Join("..", "testdata", "schemas", "*", "*.json"))
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
			toolArgs, _, _ := auditConfirmArgs(benchAuditArgs)
			_ = e.argsHash(toolArgs)
		}
	})
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = oldArgsHash(e, benchAuditArgs)
		}
	})
}
