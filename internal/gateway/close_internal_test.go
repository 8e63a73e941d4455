package gateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/config"
)

// SV-9: a part that does not stop is not waited for past the overrun:
// Close answers ErrCloseStuck naming the step, and logs it, so serve can
// exit anyway.
func TestCloseWithinNamesWhatDidNotStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&logged, nil))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		release := make(chan struct{})
		defer close(release)
		start := time.Now()
		err := closeWithin(ctx, 2*time.Second, log, func(enter func(string)) error {
			enter("sessions")
			enter("upstreams")
			<-release // an upstream that never closes
			return nil
		})
		if !errors.Is(err, ErrCloseStuck) || !strings.Contains(err.Error(), "upstreams") {
			t.Fatalf("err %v, want ErrCloseStuck naming upstreams", err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("gave up after %v, want the deadline plus the overrun, 3s", took)
		}
		if !strings.Contains(logged.String(), `"stopping":"upstreams"`) {
			t.Errorf("log does not name the step: %s", logged.String())
		}
	})
}

// SV-9: a Close that finishes in time answers with its own error, whatever the
// overrun; without a deadline it is waited for.
func TestCloseWithinReturnsWorksError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cut := errors.New("calls cut")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := closeWithin(ctx, time.Second, slog.New(slog.DiscardHandler), func(enter func(string)) error {
			enter("calls in flight")
			time.Sleep(1500 * time.Millisecond)
			return cut
		}); err != cut {
			t.Errorf("err %v, want the work's own", err)
		}
		if err := closeWithin(context.Background(), time.Second, slog.New(slog.DiscardHandler), func(func(string)) error {
			time.Sleep(time.Hour)
			return nil
		}); err != nil {
			t.Errorf("err %v without a deadline", err)
		}
	})
}

// OP-8: Close may stop the reload loop before that loop's goroutine has
// first run; the loop was handed its stop channel when it was started, so
// it still stops, and stopReloads returns.
func TestStopReloadsBeforeTheLoopRuns(t *testing.T) {
	for range 200 {
		h := newReloadHarness(t, false)
		stopped := make(chan struct{})
		go func() {
			h.g.stopReloads()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatal("stopReloads still waits for the reload loop 30 s later")
		}
	}
}

// OP-8: a Close that came first leaves no reload loop to start.
func TestNoReloadsAfterStop(t *testing.T) {
	g := &Gateway{cfg: &config.Config{}, log: slog.New(slog.DiscardHandler)}
	g.stopReloads()
	err := g.StartReloads(ReloadSource{Path: "toolgate.yaml", Load: func() (*config.Config, error) { return g.Config(), nil }})
	if err == nil || !strings.Contains(err.Error(), "closing") {
		t.Fatalf("StartReloads after stopReloads: %v, want refused as closing", err)
	}
	g.RequestReload("SIGHUP") // nothing runs it, and nothing blocks
}
