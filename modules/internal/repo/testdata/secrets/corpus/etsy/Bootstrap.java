public class Bootstrap {
    static {
        System.setProperty("etsy.access.token", "46rm@@vcv98bym2vp6qipex0ex");
    }
}
