public class Bootstrap {
    static {
        System.setProperty("gcp.api.key", "AIza@@SyNHxIf32IQ1a1yjl3ZJIqKZqzLAK1XhDk-");
    }
}
