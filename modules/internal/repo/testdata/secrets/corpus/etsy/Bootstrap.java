public class Bootstrap {
    static {
        System.setProperty("etsy.access.token", "x2vn@@rcleh9k1bxy2q72iwdn2");
    }
}
