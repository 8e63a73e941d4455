package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
)

// Policies and limits on against off (PO-1, PO-3, QB-2): two more
// gateways, the same as the first but one with policyRules rules none of
// which match the bench's calls, the other with those rules and a rate
// and a quota that count every call without refusing any, in front of
// the same HTTP echo; the three are measured in interleaved rounds and
// the ratios to the plain gateway reported.

// policyRules is how many rules the policed gateway has.
const policyRules = 50

// policyResult is the policed gateways against the plain one.
type policyResult struct {
	Rules  int        `json:"rules"`
	Limits []string   `json:"limits"`
	Off    pathResult `json:"off"`
	// Rules is the gateway with the rules only; On with rules and limits.
	RulesOnly policyStep `json:"rulesOnly"`
	On        policyStep `json:"on"`
	Errors    int        `json:"errors"`
	Note      string     `json:"note,omitempty"`
}

// policyStep is one policed gateway against the plain one.
type policyStep struct {
	Path pathResult `json:"path"`
	// Ratios are on ÷ off, medians over rounds.
	SeqP50Ratio float64 `json:"seqP50Ratio"`
	SeqP99Ratio float64 `json:"seqP99Ratio"`
	ConcRatio   float64 `json:"concRatio"` // calls/s on ÷ off
	// AddedP50Us is the median over rounds of the sequential p50 on minus
	// off: what the rules and limits add to the median call.
	AddedP50Us float64 `json:"addedP50Us"`
	// AddedCPUPerCall is CPU per call on minus off (concurrent phase).
	AddedCPUPerCall float64 `json:"addedCpuPerCallUs"`
}

// PolicedRules are the policed gateway's rules: half read the actor's
// roles and tenant (a guard the call fails, so no CEL runs), half only the
// arguments (evaluated on every call); none matches a bench call. The
// lab's everything-on profile writes the same rules (OP-9).
func PolicedRules() []config.PolicyRule {
	rules := make([]config.PolicyRule, 0, policyRules)
	for i := range policyRules {
		when := fmt.Sprintf(`"role%[1]d" in actor.roles && !args.message.startsWith("toolgate") || actor.tenant == "t%[1]d" && size(args.message) > 10`, i)
		if i%2 == 1 {
			when = fmt.Sprintf(`args.message.startsWith("forbidden-%[1]d") || size(args.message) > 100%[1]d`, i)
		}
		rules = append(rules, config.PolicyRule{ID: fmt.Sprintf("bench-rule-%d", i), When: when, Effect: config.PolicyDeny, Reason: "never matches"})
	}
	return rules
}

// PolicedLimits are a rate and a quota per actor that count every call,
// the quota in the store, without refusing one.
func PolicedLimits() []config.Limit {
	return []config.Limit{
		{ID: "bench-rate", Per: "actor", Rate: "1000000/s", Burst: 1000000},
		{ID: "bench-quota", Per: "actor", Quota: "1000000000/day"},
	}
}

// policedConfig adds to cfg the rules of the policed gateway and, with
// limits, its limits.
func policedConfig(cfg *config.Config, limits bool) (*config.Config, error) {
	cfg.Policies = &config.Policies{Default: config.PolicyAllow, Rules: PolicedRules()}
	if limits {
		cfg.Limits = PolicedLimits()
	}
	if _, err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("policed bench config: %w", err)
	}
	return cfg, nil
}

// startPoliced starts a policed gateway in front of the HTTP echo, with
// its own store, and returns its endpoint URL.
func startPoliced(ctx context.Context, key, dir, echoURL string, limits bool) (*gateway.Gateway, string, error) {
	cfg, err := benchGatewayConfig(key, filepath.Join(dir, fmt.Sprintf("policed-%v.db", limits)), []config.Upstream{echoUpstream(echoURL)})
	if err != nil {
		return nil, "", err
	}
	if cfg, err = policedConfig(cfg, limits); err != nil {
		return nil, "", err
	}
	gw, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		return nil, "", err
	}
	if err := gw.Start(ctx); err != nil {
		gw.Close(context.Background())
		return nil, "", fmt.Errorf("policed gateway start-up: %w", err)
	}
	return gw, "http://" + gw.Addr() + cfg.Endpoints[0].Path, nil
}

// measurePolicy runs the plain gateway and the policed ones (rules only,
// then rules and limits) in interleaved rounds, sequential then
// concurrent, as measureCalls does.
func measurePolicy(ctx context.Context, cfg Config, off, rules, on func() (caller, error), echoConns *countingListener) (policyResult, error) {
	res := policyResult{Rules: policyRules, Limits: []string{"a rate per actor (1000000/s)", "a quota per actor (1000000000/day, counted in the store)"}}
	warm := min(50, cfg.Calls/10+5)
	offRun, err := newPathRun(ctx, "http via gateway, no policy", off, cfg.Sessions, warm)
	if err != nil {
		return res, err
	}
	type step struct {
		run   *pathRun
		r     ratios
		added []float64
	}
	var steps []*step
	for _, p := range []struct {
		name string
		mk   func() (caller, error)
	}{{"http via gateway, rules", rules}, {"http via gateway, rules and limits", on}} {
		run, err := newPathRun(ctx, p.name, p.mk, cfg.Sessions, warm)
		if err != nil {
			return res, err
		}
		steps = append(steps, &step{run: run})
	}
	perRound := max(1, cfg.Calls/cfg.Rounds)
	for round := range cfg.Rounds {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		n := perRound
		if round == cfg.Rounds-1 {
			n = max(1, cfg.Calls-perRound*(cfg.Rounds-1))
		}
		o := offRun.runSeq(ctx, n)
		for _, s := range steps {
			p := s.run.runSeq(ctx, n)
			s.r.addSeq(o, p)
			s.added = append(s.added, pct(p, 50)-pct(o, 50))
		}
	}
	phase := time.Duration(cfg.Seconds / float64(cfg.Rounds) * float64(time.Second))
	rss := &rssMax{}
	for range cfg.Rounds {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		oRate, o := offRun.runConc(ctx, phase, echoConns, rss)
		for _, s := range steps {
			pRate, p := s.run.runConc(ctx, phase, echoConns, rss)
			s.r.addConc(oRate, pRate, o, p)
		}
	}
	res.Off = offRun.result("client →HTTP→ gateway →HTTP→ echo, no policy or limit")
	paths := []string{fmt.Sprintf("the same with %d rules that never match", policyRules),
		fmt.Sprintf("the same with %d rules that never match, a rate and a quota per actor", policyRules)}
	out := []*policyStep{&res.RulesOnly, &res.On}
	res.Errors = offRun.errors
	for i, s := range steps {
		ps := policyStep{Path: s.run.result(paths[i]), SeqP50Ratio: median(s.r.seq50), SeqP99Ratio: median(s.r.seq99),
			ConcRatio: median(s.r.conc), AddedP50Us: round1(median(s.added))}
		if res.Off.Conc.CPUPerCall > 0 && ps.Path.Conc.CPUPerCall > 0 {
			ps.AddedCPUPerCall = round1(ps.Path.Conc.CPUPerCall - res.Off.Conc.CPUPerCall)
		}
		*out[i] = ps
		res.Errors += s.run.errors
	}
	for _, p := range append([]*pathRun{offRun}, steps[0].run, steps[1].run) {
		if p.lastErr != nil {
			res.Note += fmt.Sprintf(" Last error on %s: %v.", p.name, p.lastErr)
		}
	}
	return res, nil
}

// printPolicy writes the policy phase's lines of Print.
func (r *Result) printPolicy(w io.Writer) {
	p := r.Policy
	if p.Rules == 0 {
		return
	}
	line := func(label string, s policyStep) {
		fmt.Fprintf(w, "%-23s on/off: sequential p50 %.2f, p99 %.2f; concurrent calls/s %.2f; the median call %s, CPU/call %s\n",
			label, s.SeqP50Ratio, s.SeqP99Ratio, s.ConcRatio, signedUs(s.AddedP50Us), signedUs(s.AddedCPUPerCall))
	}
	line("policies", p.RulesOnly)
	line("policies and limits", p.On)
	fmt.Fprintf(w, "                       (%d rules that never match, half guarded by roles and tenant, half on the arguments; limits: %s and %s; same rounds)\n",
		p.Rules, p.Limits[0], p.Limits[1])
	if p.Note != "" {
		fmt.Fprintf(w, "                      %s\n", p.Note)
	}
}

// signedUs is fmtUs with its sign: a difference.
func signedUs(v float64) string {
	if v < 0 {
		return "-" + fmtUs(-v)
	}
	return "+" + fmtUs(v)
}
