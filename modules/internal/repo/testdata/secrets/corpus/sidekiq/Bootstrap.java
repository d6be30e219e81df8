public class Bootstrap {
    static {
        System.setProperty("sidekiq.secret", "e01c@@fda5:d64f6baf");
    }
}
