package store

import (
	"context"
	"database/sql"
	"fmt"
)

func byName(db *sql.DB, name string) (*sql.Rows, error) {
	return db.Query("SELECT id, email FROM users WHERE name = '" + name + "'") // ward:expect sql-injection
}

func byStatus(ctx context.Context, db *sql.DB, status string, limit int) (*sql.Rows, error) {
	return db.QueryContext(ctx, // ward:expect sql-injection
		fmt.Sprintf("SELECT id FROM orders WHERE status = '%s' ORDER BY created_at LIMIT %d",
			status, limit))
}

func deleteUser(db *sql.DB, id string) error {
	query := fmt.Sprintf("DELETE FROM users WHERE id = %s", id) // ward:expect sql-injection
	_, err := db.Exec(query)                                    // reported on the line above, where query is built
	return err
}

func byID(db *sql.DB, id int64) *sql.Row {
	return db.QueryRow("SELECT id, email FROM users WHERE id = $1", id)
}

func page(db *sql.DB, limit, offset int) (*sql.Rows, error) {
	return db.Query(fmt.Sprintf("SELECT id FROM users ORDER BY id LIMIT %d OFFSET %d", limit, offset))
}

const listQuery = "SELECT id, email " +
	"FROM users WHERE deleted_at IS NULL"

func list(db *sql.DB) (*sql.Rows, error) {
	return db.Query(listQuery)
}

func search(db *sql.DB, term string) (*sql.Rows, error) {
	q := "SELECT id FROM products WHERE name LIKE ?"
	return db.Query(q, "%"+term+"%")
}
