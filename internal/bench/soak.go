package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
)

// SoakConfig sizes a soak run: clients open sessions, call
// through them, and then leave them — some with DELETE, most abandoned to
// expire under a short gateway.sessionIdleTimeout — for Duration, in two
// halves each followed by the sessions' expiry, while the process's memory
// is sampled.
type SoakConfig struct {
	Duration        time.Duration `json:"duration"`        // load phase; bounded (default 30 s)
	Clients         int           `json:"clients"`         // concurrent clients
	CallsPerSession int           `json:"callsPerSession"` // calls before a session is left
	IdleTimeout     time.Duration `json:"idleTimeout"`     // gateway.sessionIdleTimeout
	// DeleteEvery: every n-th session is ended with DELETE, the others
	// abandoned.
	DeleteEvery int       `json:"deleteEvery"`
	Progress    io.Writer `json:"-"`
}

// DefaultSoakConfig is a 30 s soak: 8 clients, sessions expiring after 2 s.
func DefaultSoakConfig() SoakConfig {
	return SoakConfig{Duration: 30 * time.Second, Clients: 8, CallsPerSession: 5, IdleTimeout: 2 * time.Second, DeleteEvery: 4}
}

// MaxSoakDuration bounds the load phase: a soak is a check, not a service.
const MaxSoakDuration = 10 * time.Minute

// SoakSample is the process's memory at one moment, after a GC.
type SoakSample struct {
	Label        string  `json:"label"`
	AtSeconds    float64 `json:"atSeconds"`
	HeapBytes    uint64  `json:"heapBytes"` // live heap after runtime.GC
	RSSBytes     int64   `json:"rssBytes"`
	Goroutines   int     `json:"goroutines"`
	LiveSessions int     `json:"liveSessions"`
	Opened       int64   `json:"sessionsOpened"`
	Calls        int64   `json:"calls"`
}

// SoakResult is a soak run's samples and counts.
type SoakResult struct {
	Config  SoakConfig   `json:"config"`
	Samples []SoakSample `json:"samples"` // start; per half: every fifth of it, its end, drained
	Opened  int64        `json:"sessionsOpened"`
	Deleted int64        `json:"sessionsDeleted"`
	Calls   int64        `json:"calls"`
	Errors  int64        `json:"errors"`
	// HeapGrowth is the heap once the second half's sessions expired over
	// the heap once the first half's did: about 1 when sessions leave
	// nothing behind. DrainedOverStart is the last over the start (it
	// includes what warms up once).
	HeapGrowth       float64 `json:"heapGrowth"`
	DrainedOverStart float64 `json:"drainedOverStart"`
	ElapsedSeconds   float64 `json:"elapsedSeconds"`
}

// Soak runs a gateway in this process with the built-in echo upstream over
// Streamable HTTP on 127.0.0.1 and soaks it as SoakConfig says. The RSS is
// the whole process's: clients and upstream included.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	def := DefaultSoakConfig()
	if cfg.Duration <= 0 {
		cfg.Duration = def.Duration
	}
	if cfg.Duration > MaxSoakDuration {
		return nil, fmt.Errorf("soak: a duration of at most %v", MaxSoakDuration)
	}
	if cfg.Clients <= 0 {
		cfg.Clients = def.Clients
	}
	if cfg.CallsPerSession <= 0 {
		cfg.CallsPerSession = def.CallsPerSession
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = def.IdleTimeout
	}
	if cfg.DeleteEvery <= 0 {
		cfg.DeleteEvery = def.DeleteEvery
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	started := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tmp, err := os.MkdirTemp("", "toolgate-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	var servers sync.WaitGroup
	defer servers.Wait()
	defer cancel()
	echoURL, err := serveEcho(ctx, &servers, nil)
	if err != nil {
		return nil, err
	}

	key := randomHex(24)
	gcfg, err := benchGatewayConfig(key, filepath.Join(tmp, "toolgate.db"), []config.Upstream{echoUpstream(echoURL)})
	if err != nil {
		return nil, err
	}
	gcfg.Gateway.SessionIdleTimeout = cfg.IdleTimeout
	// Every client's sessions under one actor: the per-actor cap must hold
	// the sessions of one idle timeout.
	gcfg.Gateway.MaxSessionsPerActor = gcfg.Gateway.MaxSessions
	gw, err := gateway.New(ctx, gcfg, nil)
	if err != nil {
		return nil, err
	}
	defer gw.Close(context.Background())
	if err := gw.Start(ctx); err != nil {
		return nil, fmt.Errorf("gateway start-up: %w", err)
	}
	url := "http://" + gw.Addr() + "/mcp"
	hc := benchHTTPClient(cfg.Clients)
	defer hc.CloseIdleConnections()
	if err := waitForTools(ctx, hc, url, key, 1, 10*time.Second); err != nil {
		return nil, err
	}

	res := &SoakResult{Config: cfg}
	var opened, deleted, calls, errs atomic.Int64
	sample := func(label string) {
		hc.CloseIdleConnections()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss, _ := processRSS()
		s := SoakSample{Label: label, AtSeconds: round3(time.Since(started).Seconds()), HeapBytes: ms.HeapAlloc, RSSBytes: rss,
			Goroutines: runtime.NumGoroutine(), LiveSessions: len(gw.Sessions().List()), Opened: opened.Load(), Calls: calls.Load()}
		res.Samples = append(res.Samples, s)
		fmt.Fprintf(progress, "toolgate bench --soak: %-11s %6.1fs heap %6.1f MiB rss %6.1f MiB sessions %5d opened %6d calls %7d\n",
			label, s.AtSeconds, mib(s.HeapBytes), mib(uint64(max(s.RSSBytes, 0))), s.LiveSessions, s.Opened, s.Calls)
	}
	sample("start")

	// Two halves, each load then drain: the heap once the first half's
	// sessions all expired against the heap once the second's did shows
	// whether sessions leave anything behind; the first drain also holds
	// what warms up once (pools, caches).
	drained := make([]uint64, 0, 2)
	for half := 1; half <= 2; half++ {
		if err := soakHalf(ctx, cfg, half, sample, func(load context.Context, n int) {
			s, err := openSession(load, hc, url, key)
			if err != nil {
				if load.Err() == nil {
					errs.Add(1)
				}
				return
			}
			opened.Add(1)
			for range cfg.CallsPerSession {
				res, rpcErr, err := s.CallTool(load, "http_echo", map[string]string{"message": echoMessage})
				switch {
				case load.Err() != nil:
				case err != nil || rpcErr != nil || res.IsError:
					errs.Add(1)
				default:
					calls.Add(1)
				}
			}
			if n%cfg.DeleteEvery == 0 {
				if _, err := s.Delete(load); err == nil {
					deleted.Add(1)
				}
			}
			// The others are abandoned: they expire after IdleTimeout.
		}); err != nil {
			return nil, err
		}
		// Drained: every abandoned session expired (bounded: the sweeper
		// runs within a fraction of the timeout after it passes).
		drain := time.NewTimer(cfg.IdleTimeout*3 + 5*time.Second)
		poll := time.NewTicker(cfg.IdleTimeout / 4)
		for len(gw.Sessions().List()) > 0 {
			select {
			case <-poll.C:
			case <-drain.C:
				return nil, errors.New("soak: sessions did not expire")
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		drain.Stop()
		poll.Stop()
		sample(fmt.Sprintf("drained %d", half))
		drained = append(drained, res.Samples[len(res.Samples)-1].HeapBytes)
	}

	res.Opened, res.Deleted, res.Calls, res.Errors = opened.Load(), deleted.Load(), calls.Load(), errs.Load()
	res.HeapGrowth = round3(float64(drained[1]) / float64(max(drained[0], 1)))
	res.DrainedOverStart = round3(float64(drained[1]) / float64(max(res.Samples[0].HeapBytes, 1)))
	res.ElapsedSeconds = round3(time.Since(started).Seconds())
	return res, ctx.Err()
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// Print writes the samples as a table.
func (r *SoakResult) Print(w io.Writer) {
	fmt.Fprintf(w, "soak: %v of %d clients, %d calls per session, sessionIdleTimeout %v, every %d-th session deleted, the others abandoned\n",
		r.Config.Duration, r.Config.Clients, r.Config.CallsPerSession, r.Config.IdleTimeout, r.Config.DeleteEvery)
	fmt.Fprintf(w, "%-11s %8s %10s %10s %10s %9s %9s %9s\n", "sample", "at s", "heap MiB", "RSS MiB", "goroutines", "sessions", "opened", "calls")
	for _, s := range r.Samples {
		fmt.Fprintf(w, "%-11s %8.1f %10.1f %10.1f %10d %9d %9d %9d\n", s.Label, s.AtSeconds, mib(s.HeapBytes), mib(uint64(max(s.RSSBytes, 0))),
			s.Goroutines, s.LiveSessions, s.Opened, s.Calls)
	}
	fmt.Fprintf(w, "sessions opened %d (deleted %d, the rest expired), calls %d, errors %d\n", r.Opened, r.Deleted, r.Calls, r.Errors)
	fmt.Fprintf(w, "heap drained after the second half / after the first: %.2f; last / start: %.2f\n", r.HeapGrowth, r.DrainedOverStart)
}

// soakHalf runs cfg.Clients clients for half of cfg.Duration, each calling
// session(load, n) for its n-th session until the half is over, and
// samples five times during it and once at its end.
func soakHalf(ctx context.Context, cfg SoakConfig, half int, sample func(string), session func(context.Context, int)) error {
	d := cfg.Duration / 2
	load, stop := context.WithTimeout(ctx, d)
	defer stop()
	var clients sync.WaitGroup
	for range cfg.Clients {
		clients.Go(func() {
			for n := 1; load.Err() == nil; n++ {
				session(load, n)
			}
		})
	}
	tick := time.NewTicker(d / 5)
	for i := 1; i < 5; i++ {
		select {
		case <-tick.C:
			sample(fmt.Sprintf("%d: %d%%", half, i*20))
		case <-load.Done():
		}
	}
	tick.Stop()
	<-load.Done()
	sample(fmt.Sprintf("%d: end", half))
	clients.Wait()
	return ctx.Err()
}
