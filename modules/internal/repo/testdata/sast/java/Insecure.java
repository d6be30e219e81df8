package com.example.billing;

import java.io.InputStream;
import java.io.ObjectInputStream;
import java.security.MessageDigest;
import java.security.cert.X509Certificate;
import javax.net.ssl.HostnameVerifier;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLSession;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

public class Insecure {
    public Object readSession(InputStream in) throws Exception {
        ObjectInputStream ois = new ObjectInputStream(in);
        return ois.readObject(); // ward:expect unsafe-deserialization
    }

    public Process archive(String dir) throws Exception {
        return Runtime.getRuntime().exec("tar czf /tmp/out.tgz " + dir); // ward:expect shell-injection
    }

    public Process list() throws Exception {
        return Runtime.getRuntime().exec(new String[] {"ls", "-l", "/var/data"});
    }

    public Process viaShell(String name) throws Exception {
        return new ProcessBuilder("sh", "-c", "grep " + name + " /var/log/app.log").start(); // ward:expect shell-injection
    }

    static TrustManager[] trustAll = new TrustManager[] {
        new X509TrustManager() {
            public X509Certificate[] getAcceptedIssuers() { return null; }
            public void checkClientTrusted(X509Certificate[] certs, String authType) { }
            public void checkServerTrusted(X509Certificate[] certs, String authType) { } // ward:expect tls-verify-disabled
        }
    };

    static HostnameVerifier anyHost = new HostnameVerifier() {
        public boolean verify(String hostname, SSLSession session) { return true; } // ward:expect tls-verify-disabled
    };

    static void relax() {
        HttpsURLConnection.setDefaultHostnameVerifier((host, session) -> true); // ward:expect tls-verify-disabled
    }

    public static String hashPassword(String password) throws Exception {
        MessageDigest md = MessageDigest.getInstance("MD5"); // ward:expect weak-hash
        byte[] digest = md.digest(password.getBytes("UTF-8"));
        return new java.math.BigInteger(1, digest).toString(16);
    }

    public static byte[] checksum(byte[] data) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-1");
        return md.digest(data);
    }

    public static byte[] strong(byte[] data) throws Exception {
        return MessageDigest.getInstance("SHA-256").digest(data);
    }
}
