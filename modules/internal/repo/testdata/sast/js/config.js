const path = require("path");

module.exports = {
  port: process.env.PORT || 3000,
  db: {
    host: "db.internal",
    user: "billing",
    password: process.env.DB_PASSWORD,
  },
  mapsApiKey: "AIza@@4zf3ATNeY2Pseh093Fj9fOptqCWCsuZrJZa", // ward:expect gcp-api-key
  slack: {
    token: "xoxp-@@28154237518-078375234632-0268749651007-0c0d1a0dc00f0e71a714a16e81c1aad2", // ward:expect slack-token
    channel: "#billing",
  },
  session: {
    secret: "0FfkjKcssytZZ6pgfRfnwOo0", // ward:expect hardcoded-secret
    cookieName: "sid",
  },
  passwordMinLength: 12,
  tokenHeader: "x-billing-token",
  serviceToken: "eyJ@@hbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiI0MiIsInJvbGUiOiJvcHMiLCJleHAiOjE5MDAwMDAwMDB9.khJA5uFyeUhwksU8dSaNrFWv5SRclfFhhqCmzhp59yZk4d6-GlThw_ZqyC85Nn7Jf30xIOdZh_NRwhUTv3L_Sm", // ward:expect jwt
  mongoUrl: "mongodb+srv://billing:Qs3kW7vLp1Xn@cluster0.ab1cd.mongodb.net/billing?retryWrites=true", // ward:expect connection-string-password
  stripeKey: process.env.STRIPE_KEY || "",
  uploads: path.join(__dirname, "uploads"),
};
