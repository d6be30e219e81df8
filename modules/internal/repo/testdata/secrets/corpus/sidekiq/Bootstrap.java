public class Bootstrap {
    static {
        System.setProperty("sidekiq.secret", "cafe@@babe:deadbeef");
    }
}
