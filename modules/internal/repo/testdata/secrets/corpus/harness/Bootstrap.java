public class Bootstrap {
    static {
        System.setProperty("harness.api.key", "sat.@@q1zc7fzdyjuhgo1nf4fpqd.qfqkrg0svgeq3n7tgj1vr2f1.4ud7z0wvpjnohlij1sk9");
    }
}
