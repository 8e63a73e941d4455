package gateway

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/config"
)

// diffSecret is in every secret of the diff tests' configs: no key the diff
// names may contain it.
const diffSecret = "diff-SECRET-0123456789abcdef0123456789abcdef"

// diffBase is the config the diff tests change one thing of at a time.
const diffBase = `gateway:
  listen: 127.0.0.1:7331
  confirm: {secret: ` + diffSecret + `}
endpoints:
  - path: /mcp
    name: one
    tools: ["*"]
    auth:
      apiKeys:
        - {key: key-` + diffSecret + `, actor: {id: alice}}
  - path: /dev
    actor: {id: dev}
upstreams:
  - {name: a, command: a-server, env: {TOKEN: ` + diffSecret + `}}
  - {name: b, url: "http://127.0.0.1:1/mcp"}
`

func loadDiffConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(p, config.LoadOptions{Environ: func() []string { return nil }, HomeDir: t.TempDir(), Version: "test"})
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	return cfg
}

// diffSummary is a configDiff without its effective config, for cmp.
type diffSummary struct {
	Added, Removed, Changed []string
	Fields                  map[string][]string
	Auth, Tools, Closed     []string
	Review, Operators       bool
	Messages                []string
	Restart                 []string
}

func summarize(d *configDiff) diffSummary {
	s := diffSummary{Added: d.upAdded, Removed: d.upRemoved, Changed: d.upChanged, Auth: d.authChanged, Tools: d.toolsChanged,
		Closed: d.closed, Review: d.reviewMode, Operators: d.operators, Messages: d.messages, Restart: d.restart}
	if len(d.upFields) > 0 {
		s.Fields = d.upFields
	}
	return s
}

// OP-8: the diff of two configs sorts each change into what applies live
// (upstreams, endpoint auth and allow-lists, review mode, approvals) and
// what waits for a restart, by key path, and names no secret.
func TestDiffConfigsOP8(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want diffSummary
	}{
		{"same", func(s string) string { return s }, diffSummary{}},
		{"upstream added", func(s string) string { return s + "  - {name: c, command: c-server}\n" }, diffSummary{Added: []string{"c"}}},
		{"upstream removed", func(s string) string {
			return strings.Replace(s, "  - {name: b, url: \"http://127.0.0.1:1/mcp\"}\n", "", 1)
		},
			diffSummary{Removed: []string{"b"}}},
		{"upstream env", func(s string) string { return strings.Replace(s, "TOKEN: "+diffSecret, "TOKEN: other-"+diffSecret, 1) },
			diffSummary{Changed: []string{"a"}, Fields: map[string][]string{"a": {"env"}}}},
		{"upstream filters and prefix", func(s string) string {
			return strings.Replace(s, "command: a-server,", `command: a-server, prefix: x, include: ["get_*"], timeout: 5s, health: {interval: 9s},`, 1)
		}, diffSummary{Changed: []string{"a"}, Fields: map[string][]string{"a": {"prefix", "include", "timeout", "health.interval"}}}},
		{"approval only", func(s string) string {
			return strings.Replace(s, "command: a-server,", "command: a-server, approval: operator,", 1)
		},
			diffSummary{Operators: true}},
		{"upstreams reordered", func(s string) string {
			return strings.Replace(s, "  - {name: a, command: a-server, env: {TOKEN: "+diffSecret+"}}\n", "", 1) +
				"  - {name: a, command: a-server, env: {TOKEN: " + diffSecret + "}}\n"
		}, diffSummary{}},
		{"key removed", func(s string) string { return strings.Replace(s, "key-"+diffSecret, "new-key-"+diffSecret, 1) },
			diffSummary{Auth: []string{"/mcp"}}},
		{"open actor", func(s string) string { return strings.Replace(s, "actor: {id: dev}", "actor: {id: dev2}", 1) },
			diffSummary{Auth: []string{"/dev"}}},
		{"allow-list", func(s string) string { return strings.Replace(s, `tools: ["*"]`, `tools: ["a_*"]`, 1) },
			diffSummary{Tools: []string{"/mcp"}}},
		{"publicUrl", func(s string) string {
			return strings.Replace(s, "  listen:", "  publicUrl: https://x.example.com\n  listen:", 1)
		},
			diffSummary{Auth: []string{"/mcp", "/dev"}}},
		{"review mode", func(s string) string {
			return strings.Replace(s, "  listen:", "  review: {mode: require}\n  listen:", 1)
		},
			diffSummary{Review: true}},
		{"confirm messages", func(s string) string {
			return strings.Replace(s, "confirm: {secret: "+diffSecret+"}", "confirm: {secret: "+diffSecret+`, messages: {used: "spent", preview: "{tool}"}}`, 1)
		},
			diffSummary{Messages: []string{"gateway.confirm.messages.preview", "gateway.confirm.messages.used"}}},
		{"confirm messages and ttl", func(s string) string {
			return strings.Replace(s, "confirm: {secret: "+diffSecret+"}", "confirm: {secret: "+diffSecret+`, ttl: 1m, messages: {waiting: "wait"}}`, 1)
		},
			diffSummary{Messages: []string{"gateway.confirm.messages.waiting"}, Restart: []string{"gateway.confirm.ttl"}}},
		{"watchConfig", func(s string) string { return strings.Replace(s, "  listen:", "  watchConfig: true\n  listen:", 1) },
			diffSummary{}},
		{"restart keys", func(s string) string {
			s = strings.Replace(s, "127.0.0.1:7331", "127.0.0.1:7332", 1)
			s = strings.Replace(s, "confirm: {secret: "+diffSecret+"}", "confirm: {secret: other-"+diffSecret+", ttl: 1m}\n  maxSessions: 3\n  metrics: {enabled: false}\n  store: /tmp/x.db", 1)
			return strings.Replace(s, "name: one", "name: two\n    instructions: hi", 1)
		}, diffSummary{Restart: []string{"gateway.listen", "gateway.store", "gateway.maxSessions", "gateway.confirm.secret", "gateway.confirm.ttl",
			"gateway.metrics", "endpoints[0].name", "endpoints[0].instructions"}}},
		{"endpoint added and removed", func(s string) string { return strings.Replace(s, "path: /dev", "path: /dev2", 1) },
			diffSummary{Closed: []string{"/dev"}, Restart: []string{
				"endpoints: /dev removed (refuses every request until the restart unmounts it)",
				"endpoints[1]: /dev2 added (served from the restart)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur, next := loadDiffConfig(t, diffBase), loadDiffConfig(t, tt.edit(diffBase))
			d := diffConfigs(cur, next)
			if diff := cmp.Diff(tt.want, summarize(d)); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
			if got := strings.Join(d.restart, " ") + strings.Join(d.upChanged, " "); strings.Contains(got, "SECRET") {
				t.Errorf("the diff names a secret: %s", got)
			}
			effConfirm, curConfirm := d.effective.Gateway.Confirm, cur.Gateway.Confirm
			effConfirm.Messages, curConfirm.Messages = config.ConfirmMessages{}, config.ConfirmMessages{}
			if d.effective.Gateway.Listen != cur.Gateway.Listen || effConfirm != curConfirm {
				t.Errorf("restart-only values were taken: %+v", d.effective.Gateway)
			}
			if d.effective.Gateway.Review != next.Gateway.Review || len(d.effective.Upstreams) != len(next.Upstreams) ||
				!cmp.Equal(d.effective.Gateway.Confirm.Messages, next.Gateway.Confirm.Messages) {
				t.Errorf("live values were not taken: %+v", d.effective.Gateway)
			}
			// The effective config against itself is no change, and the
			// next config against it reports the restart keys again.
			if again := diffConfigs(d.effective, d.effective); again.changed() || len(again.restart) != 0 {
				t.Errorf("effective vs itself: %+v", summarize(again))
			}
			if again := diffConfigs(d.effective, next); len(again.restart) != len(d.restart) || len(again.closed) != 0 {
				t.Errorf("the next reload of the same file: %+v, want the restart keys again and nothing live", summarize(again))
			}
		})
	}
}

// reloadHarness is a Gateway with only what the reload loop touches, a fake
// file watcher and a fake apply, so time can be bubbled.
type reloadHarness struct {
	g *Gateway

	mu       sync.Mutex
	changed  func(error) // the watcher's callback, while watching
	watches  int
	unwatchs int
	applied  []string // the reason of each reload, from the log
	block    chan struct{}
	loadErr  error
	// watchFails is how many watch attempts fail before one works.
	watchFails int
	// next, when set, is what Load returns.
	next *config.Config
}

func newReloadHarness(t *testing.T, watch bool) *reloadHarness {
	t.Helper()
	return newReloadHarnessWith(t, watch, 0, slog.New(slog.DiscardHandler))
}

func newReloadHarnessWith(t *testing.T, watch bool, watchFails int, log *slog.Logger) *reloadHarness {
	t.Helper()
	h := &reloadHarness{watchFails: watchFails}
	cfg := &config.Config{}
	cfg.Gateway.WatchConfig = watch
	h.g = &Gateway{cfg: cfg, log: log}
	src := ReloadSource{
		Path:     "toolgate.yaml",
		Debounce: 300 * time.Millisecond,
		Load: func() (*config.Config, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.next != nil {
				return h.next, h.loadErr
			}
			return cfg, h.loadErr
		},
		watch: func(_ string, changed func(error)) (func(), error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.watches++
			if h.watchFails > 0 {
				h.watchFails--
				return nil, errors.New("no such directory")
			}
			h.changed = changed
			return func() {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.unwatchs++
				h.changed = nil
			}, nil
		},
		apply: func(ctx context.Context, c *config.Config) (*ReloadReport, error) {
			h.g.setConfig(c)
			h.mu.Lock()
			h.applied = append(h.applied, "reload")
			block := h.block
			h.mu.Unlock()
			if block != nil {
				select {
				case <-block:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &ReloadReport{}, nil
		},
	}
	if err := h.g.StartReloads(src); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *reloadHarness) fileChanged() {
	h.mu.Lock()
	f := h.changed
	h.mu.Unlock()
	if f != nil {
		f(nil)
	}
}

func (h *reloadHarness) reloads() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.applied)
}

// OP-8: a burst of file events (an editor's save) is one reload, the
// debounce after the last event; events a debounce apart are two.
func TestReloadDebounceOP8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newReloadHarness(t, true)
		defer h.g.stopReloads()
		synctest.Wait()
		for range 5 {
			h.fileChanged()
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}
		if n := h.reloads(); n != 0 {
			t.Fatalf("%d reloads while the file was still being written", n)
		}
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		if n := h.reloads(); n != 1 {
			t.Fatalf("%d reloads after a burst of writes, want 1", n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := h.reloads(); n != 1 {
			t.Fatalf("%d reloads a minute later, want still 1", n)
		}
		h.fileChanged()
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		if n := h.reloads(); n != 2 {
			t.Fatalf("%d reloads after a second write, want 2", n)
		}
	})
}

// OP-8: requests made while a reload runs are one more reload after it,
// never two at once; a file event pending when SIGHUP reloads is taken by
// that reload.
func TestReloadCoalescesOP8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newReloadHarness(t, true)
		defer h.g.stopReloads()
		h.block = make(chan struct{})
		h.g.RequestReload("SIGHUP")
		synctest.Wait()
		if n := h.reloads(); n != 1 {
			t.Fatalf("%d reloads running, want 1", n)
		}
		for range 3 {
			h.g.RequestReload("SIGHUP")
		}
		synctest.Wait()
		if n := h.reloads(); n != 1 {
			t.Fatalf("%d reloads while one runs, want 1", n)
		}
		h.mu.Lock()
		close(h.block)
		h.block = nil
		h.mu.Unlock()
		synctest.Wait()
		if n := h.reloads(); n != 2 {
			t.Fatalf("%d reloads after the first ended, want 2 (the three requests coalesced)", n)
		}
		h.fileChanged()
		synctest.Wait()
		h.g.RequestReload("SIGHUP")
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := h.reloads(); n != 3 {
			t.Fatalf("%d reloads, want 3: the SIGHUP took the pending file change", n)
		}
	})
}

// OP-8: a kick whose requests an earlier reload already took reloads
// nothing. A burst of SIGHUPs leaves one: a request made after the loop
// took a kick and before it took the reasons joins that reload and kicks
// again; the leftover kick is sent here directly, since that window
// cannot be held open from outside.
func TestReloadLeftoverKickReloadsNothingOP8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newReloadHarness(t, false)
		defer h.g.stopReloads()
		h.g.RequestReload("SIGHUP")
		synctest.Wait()
		if n := h.reloads(); n != 1 {
			t.Fatalf("%d reloads after one request, want 1", n)
		}
		h.g.reloads.kick <- struct{}{}
		synctest.Wait()
		if n := h.reloads(); n != 1 {
			t.Fatalf("%d reloads after a leftover kick, want still 1", n)
		}
		h.g.RequestReload("SIGHUP")
		synctest.Wait()
		if n := h.reloads(); n != 2 {
			t.Fatalf("%d reloads after a second request, want 2", n)
		}
	})
}

// OP-8: Close stops the watcher and ends a reload under way; no reload
// starts after it. The watch follows gateway.watchConfig.
func TestReloadCloseOP8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newReloadHarness(t, true)
		h.block = make(chan struct{}) // never released: Close must end it
		h.g.RequestReload("SIGHUP")
		synctest.Wait()
		h.g.stopReloads()
		h.mu.Lock()
		watches, unwatchs := h.watches, h.unwatchs
		h.mu.Unlock()
		if watches != 1 || unwatchs != 1 {
			t.Errorf("watched %d times, stopped %d, want 1 and 1", watches, unwatchs)
		}
		h.g.RequestReload("SIGHUP")
		synctest.Wait()
		if n := h.reloads(); n != 1 {
			t.Errorf("%d reloads, want none after Close", n-1)
		}
		if _, err := h.g.Reload(context.Background(), &config.Config{}); err == nil {
			t.Error("Reload after Close accepted")
		}

		off := newReloadHarness(t, false)
		synctest.Wait()
		off.mu.Lock()
		if off.watches != 0 {
			t.Error("watching with watchConfig off")
		}
		off.mu.Unlock()
		off.g.stopReloads()
	})
}

// OP-8: a config that does not load is refused at ERROR with its key path,
// and the loop goes on.
func TestReloadLoadErrorOP8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newReloadHarness(t, false)
		defer h.g.stopReloads()
		var log syncLog
		h.g.log = slog.New(slog.NewJSONHandler(&log, nil))
		h.mu.Lock()
		h.loadErr = &config.ValidationErrors{Errors: []config.FieldError{{Path: "upstreams[0].url", Message: "must be http or https"}}}
		h.mu.Unlock()
		h.g.RequestReload("SIGHUP")
		synctest.Wait()
		if n := h.reloads(); n != 0 {
			t.Fatalf("an unloadable config was applied")
		}
		if s := log.String(); !strings.Contains(s, `"level":"ERROR"`) || !strings.Contains(s, "upstreams[0].url: must be http or https") {
			t.Errorf("log:\n%s", s)
		}
		h.mu.Lock()
		h.loadErr = nil
		h.mu.Unlock()
		h.g.RequestReload("SIGHUP")
		synctest.Wait()
		if n := h.reloads(); n != 1 {
			t.Errorf("%d reloads after the file was fixed, want 1", n)
		}
	})
}

type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// OP-8: a watch that cannot start (the directory is gone) is tried again
// with a doubling wait, logged once, not every time, and works once it
// can; SIGHUP reloads meanwhile.
func TestReloadRewatchOP8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log syncLog
		h := newReloadHarnessWith(t, true, 4, slog.New(slog.NewJSONHandler(&log, nil)))
		defer h.g.stopReloads()
		synctest.Wait()
		attempts := func() int { h.mu.Lock(); defer h.mu.Unlock(); return h.watches }
		// Failures at 0, 2, 6, 14 s; the fifth attempt, at 30 s, works.
		for _, step := range []struct {
			after time.Duration
			want  int
		}{{time.Second, 1}, {2 * time.Second, 2}, {4 * time.Second, 3}, {8 * time.Second, 4}, {14 * time.Second, 4}, {2 * time.Second, 5}} {
			time.Sleep(step.after)
			synctest.Wait()
			if got := attempts(); got != step.want {
				t.Fatalf("at %v: %d attempts, want %d", step.after, got, step.want)
			}
		}
		if n := strings.Count(log.String(), "config file not watched"); n != 1 {
			t.Errorf("%d warnings for one failing watch, want 1\n%s", n, log.String())
		}
		h.fileChanged()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := h.reloads(); n != 1 {
			t.Errorf("%d reloads after a change once watching, want 1", n)
		}
	})
}

// OP-8: gateway.watchConfig applies live: a reload that turns it on starts
// the watch, one that turns it off stops it.
func TestReloadWatchToggleOP8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newReloadHarness(t, false)
		defer h.g.stopReloads()
		counts := func() (int, int) { h.mu.Lock(); defer h.mu.Unlock(); return h.watches, h.unwatchs }
		for i, step := range []struct {
			on             bool
			watches, stops int
		}{{true, 1, 0}, {true, 1, 0}, {false, 1, 1}, {true, 2, 1}} {
			next := &config.Config{}
			next.Gateway.WatchConfig = step.on
			h.mu.Lock()
			h.next = next
			h.mu.Unlock()
			h.g.RequestReload("SIGHUP")
			synctest.Wait()
			if w, s := counts(); w != step.watches || s != step.stops {
				t.Errorf("step %d (watchConfig %v): watched %d, stopped %d; want %d, %d", i, step.on, w, s, step.watches, step.stops)
			}
		}
	})
}
