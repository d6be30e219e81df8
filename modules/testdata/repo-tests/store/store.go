// Package store keeps values.
package store

// Store keeps values by key.
type Store struct{ m map[string]string }

// New returns an empty Store.
func New() *Store { return &Store{m: map[string]string{}} }

// Get returns the value of key.
func (s *Store) Get(key string) string { return s.m[key] }

// Put sets the value of key.
func (s *Store) Put(key, value string) { s.m[key] = value }

func (s *Store) reset() { s.m = map[string]string{} }
