public class Bootstrap {
    static {
        System.setProperty("etsy.access.token", "lo5n@@qoegi9ylon5pi9zrcml7");
    }
}
