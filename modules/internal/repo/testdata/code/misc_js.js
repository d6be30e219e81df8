const child_process = require("child_process");
const { exec } = require("child_process");
const serialize = require("node-serialize");
const crypto = require("crypto");
const https = require("https");

function handle(req, res) {
  exec("ls " + req.query.dir); // ward:expect shell-injection
  child_process.execSync(`cat ${req.body.file}`); // ward:expect shell-injection
  eval(req.body.code); // ward:expect code-injection
  const f = new Function("a", req.query.body); // ward:expect code-injection
  setTimeout("run(" + req.query.n + ")", 10); // ward:expect code-injection
  serialize.unserialize(req.cookies.profile); // ward:expect unsafe-deserialization
  const h = crypto.createHash("md5").update(req.body.password).digest("hex"); // ward:expect weak-hash
  https.request({ host: "x", rejectUnauthorized: false }); // ward:expect tls-verify-disabled
  return f && h;
}

function ok(req) {
  exec("ls -l"); // ward:ok
  eval("2 + 2"); // ward:ok
  setTimeout(() => run(req.query.n), 10); // ward:ok
  const etag = crypto.createHash("md5").update(req.body.file).digest("hex"); // ward:ok
  const pw = crypto.createHash("sha256").update(req.body.password).digest("hex"); // ward:ok
  https.request({ host: "x", rejectUnauthorized: true }); // ward:ok
  return etag + pw;
}
