const child_process = require("child_process");
const { spawn } = require("child_process");

function cleanup(dir) {
  child_process.exec("rm -rf " + dir); // ward:expect shell-injection
}

function render(file) {
  return spawn("sh", ["-c", `pandoc ${file} -o out.pdf`]); // ward:expect shell-injection
}

function safeRender(file) {
  return spawn("pandoc", [file, "-o", "out.pdf"]);
}

async function findUsers(db, req) {
  return db.collection("users").find({ name: req.body.name }).toArray();
}

async function removeSession(db, token) {
  return db.query("DELETE FROM sessions WHERE token = '" + token + "'"); // ward:expect sql-injection
}

const PASSWORD_REGEX = /^(?=.*\d).{12,}$/;
const [token, setToken] = [null, () => {}];
const API_KEY_HEADER = "X-API-Key";
module.exports = { cleanup, render, safeRender, findUsers, removeSession, PASSWORD_REGEX, token, setToken, API_KEY_HEADER };
