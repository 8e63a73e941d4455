package coretest

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// EchoHandler answers with its arguments as text, counting calls if calls
// is not nil.
func EchoHandler(calls *atomic.Int64) core.Handler {
	return func(ctx context.Context, args json.RawMessage) (core.Result, error) {
		if calls != nil {
			calls.Add(1)
		}
		return core.TextResult(string(args)), nil
	}
}

// NativeTool is a read tool of the gateway's own.
func NativeTool(name string) core.Tool {
	return core.Tool{Name: name, Kind: core.KindRead, Description: "native " + name, Handler: EchoHandler(nil)}
}

// ImportedTool is a read tool imported from source under its default name.
func ImportedTool(source, remote string) core.Tool {
	return core.Tool{
		Name: core.ToolName(source, remote), Source: source, RemoteName: remote, Kind: core.KindRead,
		Description: remote + " from " + source, Handler: EchoHandler(nil),
	}
}

// Must fails the test on err.
func Must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
