package mcp

import (
	"context"
	"net/http"
	"net/url"

	"github.com/mark3labs/mcp-go/server"
)

// mcp-go serves what the gateway leaves to it (doc.go) through Handle, its
// entry point for a request whose body is already read: mcp-go reads the
// body the envelope was read from, not a copy of it read again, and no
// request is made up as an HTTP one.

// library hands r, whose body the endpoint read into body, to mcp-go.
func (e *Endpoint) library(w http.ResponseWriter, r *http.Request, body []byte) {
	e.http.Handle(libraryWriter{w}, &server.HTTPRequest{Method: r.Method, URL: r.URL, Header: r.Header, Body: body, Context: r.Context()})
}

// libraryWriter is a response as mcp-go's Handle writes it: it streams
// when the response can be flushed.
type libraryWriter struct{ http.ResponseWriter }

func (l libraryWriter) Flush() {
	if f, ok := l.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (l libraryWriter) CanStream() bool {
	_, ok := l.ResponseWriter.(http.Flusher)
	return ok
}

// sessionRequest asks mcp-go, whose transport holds each legacy session's
// state, to make or let go of that state (adoption, parking, ending): a
// request of the endpoint's own with no HTTP exchange under it. It returns
// the status mcp-go answered.
func (e *Endpoint) sessionRequest(ctx context.Context, method string, header http.Header, body []byte) int {
	rec := &answerStatus{hdr: http.Header{}}
	e.http.Handle(rec, &server.HTTPRequest{Method: method, URL: &url.URL{Path: e.opts.Path}, Header: header, Body: body, Context: ctx})
	if rec.code == 0 {
		return http.StatusOK
	}
	return rec.code
}

// answerStatus keeps the status of an answer and drops its body.
type answerStatus struct {
	hdr  http.Header
	code int
}

func (s *answerStatus) Header() http.Header { return s.hdr }

func (s *answerStatus) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}

func (s *answerStatus) Write(p []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(p), nil
}

func (s *answerStatus) Flush()          {}
func (s *answerStatus) CanStream() bool { return false }
