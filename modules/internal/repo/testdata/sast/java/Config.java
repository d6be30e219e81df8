package com.example.billing;

public final class Config {
    private static final String DB_PASSWORD = "Qm7!vX2pLr9t"; // ward:expect hardcoded-secret
    private static final String DB_URL = "jdbc:mysql://db.internal:3306/billing?user=billing&password=Hx5kQ8mVz3nW"; // ward:expect connection-string-password
    private static final String API_KEY_ENV = "BILLING_API_KEY";
    private static final String TWILIO_KEY = "SK@@f77ee09a4496e0ed7afceaa86dc3f346"; // ward:expect twilio-key
    private final String apiKey = System.getenv("BILLING_API_KEY");
    private static final String PASSWORD_PATTERN = "^(?=.*[A-Z])(?=.*[0-9]).{12,}$";

    public String dbPassword() {
        String fromEnv = System.getenv("DB_PASSWORD");
        return fromEnv != null ? fromEnv : "";
    }
}
