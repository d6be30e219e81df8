const { exec, execFile } = require("child_process");
const vm = require("vm");
const crypto = require("crypto");

function runCommand(cmd) {
  exec(cmd, (err, out) => console.log(out)); // ward:expect shell-injection
}

function runFile(file) {
  execFile("/usr/bin/file", [file]); // ward:ok
}

function evaluate(req, res) {
  vm.runInNewContext(req.body.code, {}); // ward:expect code-injection
  const sandbox = vm.runInNewContext("1 + 1", {}); // ward:ok
  res.send(sandbox);
}

async function find(sequelize, knex, userId) {
  await sequelize.query("SELECT * FROM users WHERE id = " + userId); // ward:expect sql-injection
  await knex.raw(`SELECT * FROM orders WHERE user = ${userId}`); // ward:expect sql-injection
  await knex.raw("SELECT * FROM orders WHERE user = ?", [userId]); // ward:ok
  await sequelize.query("SELECT * FROM users WHERE id = :id", { replacements: { id: userId } }); // ward:ok
}

function hashPassword(password) {
  return crypto.createHash("sha1").update(password).digest("base64"); // ward:expect weak-hash
}

function fingerprint(buf) {
  return crypto.createHash("sha1").update(buf).digest("hex"); // ward:ok
}
