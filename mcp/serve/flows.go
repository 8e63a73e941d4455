package serve

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/flows"
	"github.com/toolgate/toolgate/core/inspect"
	"github.com/toolgate/toolgate/mcp/session"
)

// Flow labels (IN-3): the rules and the store-backed set are package
// flows'; here is what an endpoint reads and adds of a call's flow.

// flowBacking is the endpoint's backing, from its options.
func (e *Endpoint) flowBacking() flows.Backing {
	return flows.Backing{Store: e.opts.FlowLabels, Grew: e.opts.FlowGrew, Keep: session.ContinuableFor(e.opts.SessionIdleTimeout),
		Sessions: e.ids.Resumable()}
}

// errFlowUnread and errFlowUnrecorded are what the client reads when the
// store failed under its flow; the log has the cause.
var (
	errFlowUnread     = errors.New("the call is refused: the gateway could not read what this session has already read")
	errFlowUnrecorded = errors.New("the result is withheld: the gateway could not record what this session has read")
)

// FlowChangedElsewhere is told that another replica added labels to the
// flow named digest, or, for "", that such news may have been missed: the
// flows concerned are read from the store again on their next call here
// (IN-3).
func (e *Endpoint) FlowChangedElsewhere(digest string) {
	e.flows.ChangedElsewhere(digest)
}

// flowCall is what one call reads and adds of its flow.
type flowCall struct {
	key       string
	sessioned bool
	window    time.Duration
	tool      []string // tool.labels
	session   []string // session.labels before this call
}

// flowOf reads the call's flow (IN-3); nil when the endpoint inspects
// nothing and labels nothing. An error: the store could not be read, and
// the call is refused rather than decided without what the flow read.
func (e *Endpoint) flowOf(ctx context.Context, in *Inspection, client string, actor core.Actor, session string, t core.Tool) (*flowCall, error) {
	if in == nil {
		return nil, nil
	}
	key, sessioned := flows.Key(session, actor, client)
	fc := &flowCall{key: key, sessioned: sessioned, window: in.FlowWindow, tool: flows.ToolLabels(in.Labels[t.Source], t)}
	var err error
	fc.session, err = e.flows.Labels(ctx, e.flowBacking(), key, sessioned, fc.window, time.Now())
	if err != nil {
		e.opts.Logger.Error("reading a session's flow labels from the store failed; the call is refused",
			"endpoint", e.opts.Path, "actor", actor.ID, "err", err)
		return nil, errFlowUnread
	}
	return fc, nil
}

// finishFlow adds what the call gathered to its flow, in the store too
// before the result goes back; an error withholds the result.
func (e *Endpoint) finishFlow(ctx context.Context, fc *flowCall, found []inspect.Reported) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flowWriteWait)
	defer cancel()
	if err := e.flows.Add(ctx, e.flowBacking(), fc.key, fc.sessioned, fc.window, time.Now(), flows.Gathered(fc.tool, found)); err != nil {
		e.opts.Logger.Error("recording a session's flow labels in the store failed; the call's result is withheld",
			"endpoint", e.opts.Path, "err", err)
		return errFlowUnrecorded
	}
	return nil
}

// flowWriteWait bounds the store write a call's result waits for; a
// client that went away meanwhile does not cut it short.
const flowWriteWait = 10 * time.Second
