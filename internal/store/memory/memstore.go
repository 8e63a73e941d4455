package memory

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
)

// MemStore is a Store that keeps everything in memory: for tests and for the
// demo, where nothing has to survive a restart. It has the same semantics as
// the persistent stores, pruning of spent token ids included.
type MemStore struct {
	now func() time.Time
	id  string

	mu        sync.Mutex
	closed    bool
	approvals map[approvalKey]core.Approval
	tokens    map[string]int64 // id → TokenExpiryKey
	firstUses int
	audit     []core.AuditRecord         // sorted by Time; equal times in append order
	verifier  string                     // the confirm secret's, once checked
	quotas    map[quotaKey]int64         // calls per quota window (PO-3)
	conns     map[string]core.Connection // upstream connections by id (UI-3)
	flows     map[string]memFlow         // flow labels by key (IN-3)
	flowAdds  int
}

type approvalKey struct{ source, remoteName string }

var (
	_ core.Store         = (*MemStore)(nil)
	_ core.AuditQueuer   = (*MemStore)(nil)
	_ core.SecretChecker = (*MemStore)(nil)
)

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{
		now:       time.Now,
		id:        newID(), // a new store each time: nothing outlives it
		approvals: map[approvalKey]core.Approval{},
		tokens:    map[string]int64{},
	}
}

func (m *MemStore) lock() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return core.ErrStoreClosed
	}
	return nil
}

// PutApproval implements Store.
func (m *MemStore) PutApproval(ctx context.Context, a core.Approval) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.approvals[approvalKey{a.Source, a.RemoteName}] = a
	return nil
}

// Approvals implements Store.
func (m *MemStore) Approvals(ctx context.Context) ([]core.Approval, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]core.Approval, 0, len(m.approvals))
	for _, a := range m.approvals {
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y core.Approval) int {
		return cmp.Or(cmp.Compare(x.Source, y.Source), cmp.Compare(x.RemoteName, y.RemoteName))
	})
	return out, nil
}

// DeleteApproval implements Store.
func (m *MemStore) DeleteApproval(ctx context.Context, source, remoteName string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	delete(m.approvals, approvalKey{source, remoteName})
	return nil
}

// UseToken implements Store.
func (m *MemStore) UseToken(ctx context.Context, tokenID string, expires time.Time) (bool, error) {
	if tokenID == "" {
		return false, errors.New("use token: empty token id")
	}
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	if _, spent := m.tokens[tokenID]; spent {
		return false, nil
	}
	m.tokens[tokenID] = core.TokenExpiryKey(expires)
	m.firstUses++
	if m.firstUses%core.PruneEvery == 0 {
		before := core.TokenPruneBefore(m.now())
		for id, exp := range m.tokens {
			if exp < before {
				delete(m.tokens, id)
			}
		}
	}
	return true, nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// StoreID implements Store. Memory cannot be lost from under its handle.
func (m *MemStore) StoreID(ctx context.Context) (string, error) {
	if err := m.lock(); err != nil {
		return "", err
	}
	defer m.mu.Unlock()
	return m.id, nil
}

// CheckConfirmSecret implements core.SecretChecker, for the handles of
// one process that share a MemStore.
func (m *MemStore) CheckConfirmSecret(ctx context.Context, verifier string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if m.verifier == "" {
		m.verifier = verifier
	}
	if m.verifier != verifier {
		return core.ErrConfirmSecretMismatch
	}
	return nil
}

// AppendAudit implements Store.
func (m *MemStore) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if r.Time.IsZero() {
		r.Time = m.now()
	}
	r.Time = r.Time.Round(0) // the monotonic reading means nothing once stored
	// Calls finish out of order; insert after every record not later than r.
	i := sort.Search(len(m.audit), func(i int) bool { return m.audit[i].Time.After(r.Time) })
	m.audit = slices.Insert(m.audit, i, r)
	return nil
}

// QueueAudit implements AuditQueuer: memory has nothing to wait for, so it
// is AppendAudit.
func (m *MemStore) QueueAudit(ctx context.Context, r core.AuditRecord) error {
	return m.AppendAudit(ctx, r)
}

// Audit implements Store.
func (m *MemStore) Audit(ctx context.Context, q core.AuditQuery) ([]core.AuditRecord, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	i := 0
	if !q.Since.IsZero() {
		i = sort.Search(len(m.audit), func(i int) bool { return !m.audit[i].Time.Before(q.Since) })
	}
	recs := m.audit[i:]
	if q.CallID != "" {
		var of []core.AuditRecord
		for _, r := range recs {
			if r.CallID == q.CallID {
				of = append(of, r)
			}
		}
		recs = of
	}
	if q.Limit > 0 && len(recs) > q.Limit {
		recs = recs[:q.Limit]
	}
	return slices.Clone(recs), nil
}

// Close implements Store. The contents are dropped.
func (m *MemStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.approvals, m.tokens, m.audit = nil, nil, nil
	return nil
}
