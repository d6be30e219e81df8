package store

import (
	"fmt"
	"os/exec"

	"gorm.io/gorm"
)

const tableUsers = "users"

const script = "make -C /srv/app deploy"

func byName(db *gorm.DB, name string) *gorm.DB {
	return db.Where(fmt.Sprintf("name = '%s'", name)) // ward:expect sql-injection
}

func raw(db *gorm.DB, id string) *gorm.DB {
	return db.Raw("SELECT * FROM users WHERE id = " + id) // ward:expect sql-injection
}

func safe(db *gorm.DB, name string) *gorm.DB {
	return db.Where("name = ?", name)
}

func count(db *gorm.DB) *gorm.DB {
	return db.Raw(fmt.Sprintf("SELECT count(*) FROM %s", tableUsers))
}

func deploy() error {
	return exec.Command("sh", "-c", script).Run()
}
