public class Bootstrap {
    static {
        System.setProperty("jfrog.api.key", "jfqg@@hn3681q8j7h0d5j07ie6e62btikreicgayajxh1x5hklfhbfnmicpy75wjqhc4wixpy9c");
    }
}
