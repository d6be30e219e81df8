const mysql = require("mysql2");
const { Pool } = require("pg");
const knex = require("knex")({ client: "pg" });

const connection = mysql.createConnection({ host: "db.internal", user: "billing" });
const pool = new Pool();

function userByName(req, res) {
  connection.query("SELECT * FROM users WHERE name = '" + req.query.name + "'", (err, rows) => { // ward:expect sql-injection
    res.json(rows);
  });
}

async function orders(customerId) {
  const { rows } = await pool.query(`SELECT * FROM orders WHERE customer_id = ${customerId}`); // ward:expect sql-injection
  return rows;
}

async function archive(table, days) {
  return knex.raw( // the SQL is built on the next line (EXPECT)
    `DELETE FROM ${table}
     WHERE created_at < now() - interval '${days} days'`
  );
}

async function byId(id) {
  const { rows } = await pool.query("SELECT * FROM users WHERE id = $1", [id]);
  return rows[0];
}

function byEmail(email, cb) {
  connection.query("SELECT * FROM users WHERE email = ?", [email], cb);
}

async function recent(limit) {
  return knex.raw("SELECT * FROM events ORDER BY id DESC LIMIT ?", [limit]);
}

async function search(sequelize, term) {
  const sql = "SELECT id FROM products WHERE name LIKE '%" + term + "%'";
  return sequelize.query(sql); // ward:expect sql-injection
}

function matchAll(re, text) {
  return re.exec(text);
}
