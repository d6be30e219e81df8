const mysql = require("mysql");
const { Pool } = require("pg");
const express = require("express");
const app = express();
const conn = mysql.createConnection({});
const pool = new Pool();
const TABLE = "users";

app.get("/user", (req, res) => {
  conn.query("SELECT * FROM users WHERE id = " + req.query.id, (e, r) => res.json(r)); // ward:expect sql-injection
  pool.query(`SELECT * FROM users WHERE name = '${req.params.name}'`); // ward:expect sql-injection
  const q = "DELETE FROM users WHERE id = " + req.body.id; // ward:expect sql-injection
  conn.query(q); // reported where q is built
});

app.get("/ok", (req, res) => {
  conn.query("SELECT * FROM users WHERE id = ?", [req.query.id]); // ward:ok
  pool.query("SELECT * FROM " + TABLE + " WHERE id = $1", [req.query.id]); // ward:ok
  const order = "name";
  pool.query("SELECT * FROM users ORDER BY " + order); // ward:ok
});
