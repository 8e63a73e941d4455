package auditchain

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/toolgate/toolgate/core"
)

// ExportLine is one line of audit.export: the record as the store keeps it
// and its place in its chain (OP-10). Like the record it holds no argument
// value, only the keyed argument hash.
type ExportLine struct {
	core.AuditRecord
	Link
}

// Exporter writes committed records as JSON lines to a file or stdout, for
// log shippers (audit.export). Reopen reopens the file at its path, after
// logrotate renamed it (on SIGHUP). Its methods are safe for concurrent use.
type Exporter struct {
	mu     sync.Mutex
	path   string // "-": stdout
	f      *os.File
	w      *bufio.Writer
	stdout io.Writer
	err    error  // the last write error, reported once by Err
	line   []byte // the line being written, reused
}

// OpenExporter opens path for appending ("-": stdout), creating it 0600 and
// its directory 0700 when missing.
func OpenExporter(path string, stdout io.Writer) (*Exporter, error) {
	e := &Exporter{path: path, stdout: stdout}
	if err := e.open(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Exporter) open() error {
	if e.path == "-" {
		e.w = bufio.NewWriter(e.stdout)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(e.path), 0o700); err != nil {
		return fmt.Errorf("audit.export.path: %w", err)
	}
	f, err := os.OpenFile(e.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit.export.path: %w", err)
	}
	e.f, e.w = f, bufio.NewWriter(f)
	return nil
}

// Write writes one line per record, in order, and flushes: a line is in the
// file once the batch holding it is committed. It is the store's sink
// (Writer.SetSink).
func (e *Exporter) Write(recs []core.AuditRecord, links []Link) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.w == nil {
		return
	}
	for i := range recs {
		line, err := appendExportLine(e.line[:0], &recs[i], &links[i])
		e.line = line
		if err != nil {
			e.err = err
			continue
		}
		_, _ = e.w.Write(line)
		_ = e.w.WriteByte('\n')
	}
	if err := e.w.Flush(); err != nil {
		e.err = err
		e.w.Reset(e.target()) // drop what could not be written rather than repeat it
	}
}

func (e *Exporter) target() io.Writer {
	if e.f != nil {
		return e.f
	}
	return e.stdout
}

// Err returns the last write error since the previous call, if any.
func (e *Exporter) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.err
	e.err = nil
	return err
}

// Path is the exported file, "-" for stdout.
func (e *Exporter) Path() string { return e.path }

// Reopen closes the file and opens its path again, so lines go to a new file
// once the old one was renamed. Stdout is not reopened.
func (e *Exporter) Reopen() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.f == nil {
		return nil
	}
	err := e.close()
	return errors.Join(err, e.open())
}

func (e *Exporter) close() error {
	var err error
	if e.w != nil {
		err = e.w.Flush()
	}
	if e.f != nil {
		err = errors.Join(err, e.f.Close())
	}
	e.f, e.w = nil, nil
	return err
}

// Close flushes and closes the file.
func (e *Exporter) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.path == "-" {
		var err error
		if e.w != nil {
			err = e.w.Flush()
		}
		e.w = nil
		return err
	}
	return e.close()
}
