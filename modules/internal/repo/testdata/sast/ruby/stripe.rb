require "stripe"

Stripe.api_key = "rk_live_@@5nkthBGJd8xncwjxTZVcUOpd" # ward:expect stripe-key
DB_PASSWORD = ENV["DB_PASSWORD"]
REDIS_URL = ENV.fetch("REDIS_URL", "redis://localhost:6379/0")
API_SECRET = "Lm8#qZ2vXr5t" # ward:expect hardcoded-secret

def load(blob)
  Marshal.load(blob) # ward:expect unsafe-deserialization
end
