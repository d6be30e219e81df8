public class Bootstrap {
    static {
        System.setProperty("sidekiq.secret", "8222@@aaf2:528ff480");
    }
}
