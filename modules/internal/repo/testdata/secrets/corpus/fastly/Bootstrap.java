public class Bootstrap {
    static {
        System.setProperty("fastly.api.token", "yjwb@@41hd-v1d1trzvfqqamsbzf9j9_p3");
    }
}
