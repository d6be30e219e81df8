public class Bootstrap {
    static {
        System.setProperty("fastly.api.token", "u2lv@@2m4bkl=67q6bdu4qe434and9bdhc");
    }
}
