package serve

import (
	"net/http"

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
