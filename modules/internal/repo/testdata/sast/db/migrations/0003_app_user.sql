-- The application's role
CREATE USER billing_app WITH PASSWORD 'Tq6#vL9xRm2p'; -- ward:expect hardcoded-secret
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO billing_app;
ALTER TABLE users ADD COLUMN password_hash TEXT NOT NULL DEFAULT '';
