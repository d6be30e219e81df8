const { exec, execSync, execFile } = require("child_process");
const crypto = require("crypto");

function convert(file) {
  exec(`convert ${file} out.png`, (err) => { // ward:expect shell-injection
    if (err) throw err;
  });
}

function branchLog(branch) {
  return execSync("git log --oneline " + branch).toString(); // ward:expect shell-injection
}

function safeLog(branch) {
  return execFile("git", ["log", "--oneline", branch]);
}

function listing() {
  return execSync("ls -la").toString();
}

function calc(expr) {
  return eval(expr); // ward:expect code-injection
}

function compile(body) {
  return new Function("a", "b", body); // a parameter alone: not reported (libraries compile their own)
}

function later(name) {
  setTimeout("refresh('" + name + "')", 100); // ward:expect code-injection
  setTimeout(() => refresh(name), 100);
}

function passwordDigest(password) {
  return crypto.createHash("md5").update(password).digest("hex"); // ward:expect weak-hash
}

function fileDigest(buffer) {
  return crypto.createHash("md5").update(buffer).digest("hex");
}

function strongDigest(password, salt) {
  return crypto.scryptSync(password, salt, 64).toString("hex");
}
