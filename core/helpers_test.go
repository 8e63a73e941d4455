package core

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
)

func echoHandler(calls *atomic.Int64) Handler {
	return func(ctx context.Context, args json.RawMessage) (Result, error) {
		if calls != nil {
			calls.Add(1)
		}
		return TextResult(string(args)), nil
	}
}

func nativeTool(name string) Tool {
	return Tool{Name: name, Kind: KindRead, Description: "native " + name, Handler: echoHandler(nil)}
}

func importedTool(source, remote string) Tool {
	return Tool{
		Name: ToolName(source, remote), Source: source, RemoteName: remote, Kind: KindRead,
		Description: remote + " from " + source, Handler: echoHandler(nil),
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
