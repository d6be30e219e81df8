const https = require("https");
const axios = require("axios");

process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0"; // ward:expect tls-verify-disabled

const agent = new https.Agent({ // ward:expect tls-verify-disabled
  keepAlive: true,
  rejectUnauthorized: false,
});

const strictAgent = new https.Agent({ rejectUnauthorized: true });

const client = axios.create({
  httpsAgent: agent,
  baseURL: "https://billing.internal",
});

module.exports = { client, strictAgent };
