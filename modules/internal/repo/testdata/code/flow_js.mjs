import { exec as run, spawn } from "node:child_process";
import * as cp from "child_process";
import mysql from "mysql2/promise";
import serialize from "node-serialize";
import https from "https";
import crypto from "crypto";
import vm from "vm";
import db from "./db.js";

const pool = mysql.createPool({});

export const handler = async (event, context) => {
  const { name } = JSON.parse(event.body);
  await pool.query(`SELECT * FROM users WHERE name = '${name}'`); // ward:expect sql-injection
  const id = parseInt(event.pathParameters.id, 10);
  await pool.query("SELECT * FROM users WHERE id = " + id); // ward:ok
  return vm.runInNewContext(event.queryStringParameters.expr); // ward:expect code-injection
};

export function route(router) {
  router.post("/run", async (req, res) => {
    const { cmd } = req.body;
    const wrap = () => run(`sh -c "${cmd}"`); // ward:expect shell-injection
    const args = ["-l", req.query.dir];
    spawn("ls", args); // ward:ok
    spawn("bash", ["-c", req.query.line]); // ward:expect shell-injection
    cp.execSync("git status"); // ward:ok
    const obj = serialize.unserialize(req.cookies.session); // ward:expect unsafe-deserialization
    res.send(wrap() + obj);
  });
}

export function report(opts) {
  const agent = new https.Agent({ // ward:expect tls-verify-disabled
    rejectUnauthorized: false,
  });
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0"; // ward:expect tls-verify-disabled
  const digest = crypto.createHash("md5").update(opts.secret).digest("hex");
  opts.user.updatePassword(digest); // ward:expect weak-hash
  const tag = crypto.createHash("md5").update(opts.body).digest("hex");
  opts.cache.set(tag, agent); // ward:ok
  setTimeout(`refresh(${opts.id})`, 100); // ward:expect code-injection
  setTimeout(() => opts.refresh(opts.id), 100); // ward:ok
}

export async function byId(id, limit) {
  await db.query("SELECT * FROM t WHERE id = ?", [id]); // ward:ok
  return db.query("SELECT * FROM t WHERE id = " + id + " LIMIT " + limit); // ward:expect sql-injection
}

export function search(req, res) {
  let sql = "SELECT * FROM items WHERE 1 = 1";
  if (req.query.name) {
    sql += " AND name = '" + req.query.name + "'"; // ward:expect sql-injection
  }
  sql += " ORDER BY id"; // ward:ok
  return db.query(sql).then((rows) => res.json(rows)); // ward:ok
}
