package store

import (
	"errors"
	"sort"
	"sync"
)

const DefaultCapacity = 128

var ErrNotFound = errors.New("store: key not found")

// Store is a concurrency-safe key/value store.
type Store struct {
	mu    sync.RWMutex
	items map[string][]byte
	limit int
}

type Entry struct {
	Key   string
	Value []byte
}

func New(limit int) *Store {
	if limit <= 0 {
		limit = DefaultCapacity
	}
	return &Store{items: make(map[string][]byte), limit: limit}
}

func (s *Store) Get(key string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.items[key]
	if !ok {
		return nil, ErrNotFound
	}
	return v, nil
}

func (s *Store) Put(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.items) >= s.limit {
		return errors.New("store: full")
	}
	s.items[key] = value
	return nil
}

// Snapshot copies the store, ordered by key, for debugging and tests.
func (s *Store) Snapshot(prefix string) []Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	entries := make([]Entry, 0, len(s.items))
	for k, v := range s.items {
		if len(prefix) > 0 && len(k) < len(prefix) {
			continue
		}
		entries = append(entries, Entry{Key: k, Value: append([]byte(nil), v...)})
	}
	less := func(i, j int) bool {
		return entries[i].Key < entries[j].Key
	}
	sort.Slice(entries, less)
	return entries
}

func (s Store) Len() int {
	return len(s.items)
}
