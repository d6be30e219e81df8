public class Bootstrap {
    static {
        System.setProperty("sidekiq.sensitive.url", "cafe@@babe:deadbeef");
    }
}
