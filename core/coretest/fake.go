package coretest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/toolgate/toolgate/core"
)

// FakeUpstream is an in-memory Upstream for tests (IM-35): a tool table, a
// call log, and failures to inject. The importer stamps the spec's name as
// source on its tools exactly as for a real upstream.
type FakeUpstream struct {
	mu         sync.Mutex
	info       core.ServerInfo
	tools      []core.RemoteTool
	handlers   map[string]func(args json.RawMessage) (core.Result, error)
	connected  bool
	connects   int
	attempts   int // Connect calls, failed ones included
	lists      int
	calls      map[string]int
	connectErr []error // consumed one per Connect
	listErr    []error // consumed one per ListTools
	callErr    []error // consumed one per CallTool, after the call counted
	notify     func()
	resources  []json.RawMessage
	templates  []json.RawMessage
	prompts    []json.RawMessage
	catalogErr error
}

var _ core.Upstream = (*FakeUpstream)(nil)

var _ core.ToolsChangedNotifier = (*FakeUpstream)(nil)

var _ core.CatalogUpstream = (*FakeUpstream)(nil)

// NewFakeUpstream returns a fake serving tools; every tool echoes its
// arguments unless SetHandler says otherwise.
func NewFakeUpstream(name string, tools ...core.RemoteTool) *FakeUpstream {
	return &FakeUpstream{
		info:     core.ServerInfo{Name: name, Version: "0.0.0", Protocol: "2025-06-18"},
		tools:    tools,
		handlers: make(map[string]func(json.RawMessage) (core.Result, error)),
		calls:    make(map[string]int),
	}
}

// FakeTool is a RemoteTool with a description and an optional schema.
func FakeTool(name, description string, schema string) core.RemoteTool {
	rt := core.RemoteTool{Name: name, Description: &description}
	if schema != "" {
		rt.InputSchema = json.RawMessage(schema)
	}
	return rt
}

var errFakeNotConnected = errors.New("fake upstream: not connected")

func pop(errs *[]error) error {
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

// SetTools replaces the tool table (what the next ListTools answers).
func (f *FakeUpstream) SetTools(tools ...core.RemoteTool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools = tools
}

// SetHandler sets the behaviour of one tool.
func (f *FakeUpstream) SetHandler(name string, h func(args json.RawMessage) (core.Result, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[name] = h
}

// FailConnect makes the next len(errs) Connects fail with errs in turn.
func (f *FakeUpstream) FailConnect(errs ...error) {
	f.mu.Lock()
	f.connectErr = append(f.connectErr, errs...)
	f.mu.Unlock()
}

// FailList makes the next ListTools calls fail.
func (f *FakeUpstream) FailList(errs ...error) {
	f.mu.Lock()
	f.listErr = append(f.listErr, errs...)
	f.mu.Unlock()
}

// FailCall makes the next CallTool calls fail after the call has "run"
// (counted), like a reply lost in flight.
func (f *FakeUpstream) FailCall(errs ...error) {
	f.mu.Lock()
	f.callErr = append(f.callErr, errs...)
	f.mu.Unlock()
}

// Calls reports how many times a tool ran.
func (f *FakeUpstream) Calls(name string) int { f.mu.Lock(); defer f.mu.Unlock(); return f.calls[name] }

// Connects reports how many connections were made.
func (f *FakeUpstream) Connects() int { f.mu.Lock(); defer f.mu.Unlock(); return f.connects }

// ConnectAttempts reports how many times Connect was called, failed calls
// included.
func (f *FakeUpstream) ConnectAttempts() int { f.mu.Lock(); defer f.mu.Unlock(); return f.attempts }

// Lists reports how many times the tool list was read.
func (f *FakeUpstream) Lists() int { f.mu.Lock(); defer f.mu.Unlock(); return f.lists }

// Connected reports whether a connection is open.
func (f *FakeUpstream) Connected() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.connected }

// NotifyToolsChanged plays the server's notifications/tools/list_changed.
func (f *FakeUpstream) NotifyToolsChanged() {
	f.mu.Lock()
	n := f.notify
	f.mu.Unlock()
	if n != nil {
		n()
	}
}

func (f *FakeUpstream) Connect(ctx context.Context) (core.ServerInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts++
	if err := pop(&f.connectErr); err != nil {
		return core.ServerInfo{}, err
	}
	f.connected = true
	f.connects++
	return f.info, nil
}

func (f *FakeUpstream) ListTools(ctx context.Context) ([]core.RemoteTool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.connected {
		return nil, errFakeNotConnected
	}
	f.lists++
	if err := pop(&f.listErr); err != nil {
		return nil, err
	}
	return slices.Clone(f.tools), nil
}

func (f *FakeUpstream) CallTool(ctx context.Context, name string, args json.RawMessage) (core.Result, error) {
	f.mu.Lock()
	if !f.connected {
		f.mu.Unlock()
		return core.Result{}, errFakeNotConnected
	}
	f.calls[name]++
	err := pop(&f.callErr)
	h := f.handlers[name]
	f.mu.Unlock()
	if err != nil {
		return core.Result{}, err
	}
	if h != nil {
		return h(args)
	}
	return core.TextResult(string(args)), nil
}

func (f *FakeUpstream) Ping(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.connected {
		return errFakeNotConnected
	}
	return nil
}

func (f *FakeUpstream) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connected = false
	return nil
}

func (f *FakeUpstream) OnToolsChanged(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notify = fn
}

// SetCatalog replaces the fake's resources, resource templates and prompts
// (raw list entries).
func (f *FakeUpstream) SetCatalog(resources, templates, prompts []json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resources, f.templates, f.prompts = resources, templates, prompts
}

// FailCatalog makes every catalog list fail with err until called with nil.
func (f *FakeUpstream) FailCatalog(err error) { f.mu.Lock(); f.catalogErr = err; f.mu.Unlock() }

func (f *FakeUpstream) catalogList(items []json.RawMessage) ([]json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.connected {
		return nil, errFakeNotConnected
	}
	if f.catalogErr != nil {
		return nil, f.catalogErr
	}
	return slices.Clone(items), nil
}

func (f *FakeUpstream) ListResources(context.Context) ([]json.RawMessage, error) {
	return f.catalogList(f.resources)
}

func (f *FakeUpstream) ListResourceTemplates(context.Context) ([]json.RawMessage, error) {
	return f.catalogList(f.templates)
}

func (f *FakeUpstream) ListPrompts(context.Context) ([]json.RawMessage, error) {
	return f.catalogList(f.prompts)
}

// ReadResource answers with one text content naming this fake and the URI,
// so a test sees where a read was routed.
func (f *FakeUpstream) ReadResource(_ context.Context, uri string) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["resources/read"]++
	return json.Marshal(map[string]any{"contents": []map[string]string{{"uri": uri, "text": f.info.Name + ":" + uri}}})
}

// GetPrompt answers with one message naming this fake and the remote name.
func (f *FakeUpstream) GetPrompt(_ context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return json.Marshal(map[string]any{"messages": []map[string]any{{"role": "user", "content": map[string]string{"type": "text", "text": f.info.Name + ":" + name}}}})
}
