public class Bootstrap {
    static {
        System.setProperty("cohere.api.token", "OnvL@@HZ1fqjuX5bSR9BvGMZjrq8qKktT6kHI6xRZV");
    }
}
